#pragma once

// The local backend's durable state: jobs (the TrainingJob proto), the replica records
// that tie a job's pods to processes on this host, bounded per-job events, and TCP port
// reservations. Every method is one transaction: after it returns OK the change survives
// a kill -9 of the operator (and a power cut, for the sqlite implementation).
//
// Jobs are keyed by (namespace, name). Deleting a job deletes its replica records,
// events and port reservations in the same transaction; it does not stop processes
// (the caller stops them first, from the replica records).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "operator/backend/local/process_handle.h"
#include "operator/model/observed_state.h"

namespace coach::backend::local {

struct JobKey {
  std::string namespace_;
  std::string name;

  bool operator==(const JobKey& o) const {
    return namespace_ == o.namespace_ && name == o.name;
  }
  bool operator<(const JobKey& o) const {
    return namespace_ != o.namespace_ ? namespace_ < o.namespace_ : name < o.name;
  }
};

JobKey KeyOf(const api::v1::TrainingJob& job);

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

// One replica ("pod") of a job as the local backend runs it.
struct ReplicaRecord {
  JobKey job;
  std::string name;          // Pod name, unique within the job's namespace.
  std::string replica_type;  // "Worker", "Master", ...
  int index = 0;
  ProcessHandle process;     // pid 0 while not started.
  std::string log_path;
  model::PodPhase phase = model::PodPhase::kPending;
  std::optional<int> exit_code;
  int restart_count = 0;
  std::map<std::string, int> ports;  // Port name -> allocated TCP port.
  std::vector<int> gpus;             // Device indices (CUDA_VISIBLE_DEVICES).
  absl::Time started_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  std::string message;
};

struct JobEvent {
  std::string type;  // "Normal" or "Warning".
  std::string reason;
  std::string message;
  absl::Time time = absl::InfinitePast();
};

struct PortReservation {
  int port = 0;
  JobKey job;
  std::string replica;    // Pod name.
  std::string port_name;  // "master", "rdzv", ...
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Stores a new job; assigns metadata.uid (random UUID v4), creation_timestamp,
  // resource_version "1" and generation 1; returns the stored job.
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
  // one; the new version is one higher; generation increments when the spec changed.
  // Errors: InvalidArgument (no resource_version), NotFound, Aborted (version mismatch:
  // re-read and retry).
  virtual absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) = 0;

  // Replaces only the status, with the same optimistic concurrency as Update.
  // Errors: InvalidArgument, NotFound, Aborted.
  virtual absl::StatusOr<api::v1::TrainingJob> UpdateStatus(
      const api::v1::TrainingJob& job) = 0;

  // Deletes the job with its replica records, events and port reservations. When
  // `resource_version` is given it must match. Errors: NotFound, Aborted.
  virtual absl::Status Delete(const JobKey& key,
                              std::optional<std::string> resource_version) = 0;

  // Inserts or replaces the record (job, name). Errors: NotFound (no such job).
  virtual absl::Status PutReplica(const ReplicaRecord& replica) = 0;
  // Ordered by name. Errors: none beyond storage (an unknown job has no replicas).
  virtual absl::StatusOr<std::vector<ReplicaRecord>> ListReplicas(const JobKey& job) = 0;
  // Every job's replicas, ordered by (namespace, job, name): re-adoption at startup.
  virtual absl::StatusOr<std::vector<ReplicaRecord>> ListAllReplicas() = 0;
  // Errors: NotFound (no such record).
  virtual absl::Status DeleteReplica(const JobKey& job, const std::string& name) = 0;

  // Appends an event; only the newest max_events_per_job of a job are kept.
  // Errors: NotFound (no such job).
  virtual absl::Status AppendEvent(const JobKey& job, const JobEvent& event) = 0;
  // Appends `events` in order, as one durable write where the store can (one sync for a
  // reconcile's events instead of one each). Errors: NotFound (no such job). The default
  // calls AppendEvent for each and stops at the first error.
  virtual absl::Status AppendEvents(const JobKey& job, const std::vector<JobEvent>& events);
  // Oldest first.
  virtual absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) = 0;

  // Reserves all the ports or none. Errors: NotFound (no such job), AlreadyExists (a
  // port is reserved already, by any job; nothing was reserved).
  virtual absl::Status ReservePorts(const std::vector<PortReservation>& ports) = 0;
  // Every reservation, ordered by port.
  virtual absl::StatusOr<std::vector<PortReservation>> ListPortReservations() = 0;
  // Releases every port of the job (also done by Delete).
  virtual absl::Status ReleasePorts(const JobKey& job) = 0;
};

}  // namespace coach::backend::local
