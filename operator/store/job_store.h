#pragma once

// The job store: where accepted jobs, their status and their events live, for whichever
// backend runs them. The controller and the job service (operator/core) read and write jobs
// through this interface only:
//   - the local backend's SqliteJobStore (operator/backend/local): one sqlite file that also
//     holds the local backend's replica records and port reservations (its replicas(),
//     sqlite_replica_store.h there);
//   - the Kubernetes backend's CrJobStore (operator/backend/kube): the kubeflow.org/v1 custom
//     resources themselves, events as core/v1 Events;
//   - FakeJobStore (testing/): in memory, with injectable errors.
// All three answer the same contract suite (testing/job_store_contract.h), so none can drift.
//
// Every write is durable when it returns OK: after it a kill -9 of the operator loses
// nothing (the sqlite file is synced; the API server has stored it in etcd).

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"

namespace coach::store {

// A job's identity. Kubernetes keeps a name unique per kind only (a PyTorchJob and a TFJob
// may share one), so the key of a stored job names its kind: KeyOf(job). A key without a kind
// is what a user typed (a plain name): each store says how it finds the job of that name
// (the local stores keep names unique across kinds; CrJobStore has its kind rule).
struct JobKey {
  JobKey() = default;
  // {namespace, name}: a user's plain name; {namespace, name, kind}: one job.
  JobKey(std::string ns, std::string job_name, std::string job_kind = "")
      : namespace_(std::move(ns)), name(std::move(job_name)), kind(std::move(job_kind)) {}

  std::string namespace_;
  std::string name;
  // The Kubernetes kind ("PyTorchJob"); empty: whichever kind the name has.
  std::string kind;

  bool operator==(const JobKey& o) const {
    return namespace_ == o.namespace_ && name == o.name && kind == o.kind;
  }
  bool operator!=(const JobKey& o) const { return !(*this == o); }
  bool operator<(const JobKey& o) const {
    if (namespace_ != o.namespace_) return namespace_ < o.namespace_;
    if (name != o.name) return name < o.name;
    return kind < o.kind;
  }
};

// {namespace, name, kind} of a stored job; the kind is empty when the job names none.
JobKey KeyOf(const api::v1::TrainingJob& job);
// The same job, whatever its kind: {namespace, name}.
JobKey WithoutKind(const JobKey& key);
// "ns/name", or "ns/Kind/name" for a key with a kind: for logs and per-job locks.
std::string KeyString(const JobKey& key);

struct ListOptions {
  // Empty: every namespace.
  std::string namespace_;
  // At most this many jobs per page; 0 means all.
  int page_size = 0;
  // From a previous ListResult::next_page_token; empty for the first page. Opaque.
  std::string page_token;
  // Equality selector on metadata.labels: a job matches when it has every pair. The
  // store applies it (pages are filled with matching jobs only).
  std::map<std::string, std::string> label_selector;
};

struct ListResult {
  // Ordered by (namespace, name).
  std::vector<api::v1::TrainingJob> jobs;
  // Empty when this is the last page.
  std::string next_page_token;
};

struct JobEvent {
  std::string type;  // "Normal" or "Warning".
  std::string reason;
  std::string message;
  absl::Time time = absl::InfinitePast();
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Stores a new job; assigns metadata.uid (random UUID v4), creation_timestamp,
  // a resource_version and generation 1; returns the stored job.
  // Errors: InvalidArgument (empty name or namespace), AlreadyExists (same key),
  // Internal/Unavailable (storage).
  virtual absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) = 0;

  // Errors: NotFound.
  virtual absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) = 0;

  // Get for the controller, which tolerates a slightly old copy (its status writes are
  // conditional on the resourceVersion): a store with a watch cache answers from it without
  // a request. Errors as Get.
  virtual absl::StatusOr<api::v1::TrainingJob> GetCached(const JobKey& key) { return Get(key); }

  // Errors: InvalidArgument (malformed page token, negative page size).
  virtual absl::StatusOr<ListResult> List(const ListOptions& options) = 0;

  // Replaces metadata (labels, annotations, ...) and spec; the stored status, uid and
  // creation timestamp are kept. job.metadata.resource_version must equal the stored
  // one; the new version differs from it; generation increments when the spec changed.
  // Errors: InvalidArgument (no resource_version), NotFound, Aborted (version mismatch:
  // re-read and retry).
  virtual absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) = 0;

  // Replaces only the status, with the same optimistic concurrency as Update.
  // Errors: InvalidArgument, NotFound, Aborted.
  virtual absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) = 0;

  // Deletes the job and its events. When `resource_version` is given it must match.
  // Errors: NotFound, Aborted.
  virtual absl::Status Delete(const JobKey& key, std::optional<std::string> resource_version) = 0;

  // Appends an event; only the newest events of a job are kept (a bound per store).
  // Errors: NotFound (no such job).
  virtual absl::Status AppendEvent(const JobKey& job, const JobEvent& event) = 0;
  // Appends `events` in order, as one durable write where the store can (one sync for a
  // reconcile's events instead of one each). Errors: NotFound (no such job). The default
  // calls AppendEvent for each and stops at the first error.
  virtual absl::Status AppendEvents(const JobKey& job, const std::vector<JobEvent>& events);
  // Oldest first.
  virtual absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) = 0;
};

}  // namespace coach::store
