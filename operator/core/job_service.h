#pragma once

// JobService: the logic behind every TrainingService RPC, without gRPC (the server in
// operator/server only adapts requests and maps absl codes to gRPC codes).
//
// Error codes (the same as the API's):
//   InvalidArgument     bad manifest, job or request; the message names every field
//   NotFound            no such job
//   AlreadyExists       Create with a (namespace, name) already taken
//   FailedPrecondition  Suspend/Resume of a finished job
//   ResourceExhausted   the backend can never run the job (nothing is stored)
//   Unavailable         store or backend unreachable (retry)
//
// Thread-safe. Every change to a job is published to the WatchBroadcaster and enqueued
// for the controller (SetEnqueue).

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/v1/training_job.pb.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/core/job_observer.h"
#include "operator/core/keyed_mutex.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/history/log_keeper.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/model/reconcile_types.h"
#include "operator/store/job_store.h"

namespace coach::core {

using store::JobKey;
using store::JobStore;
using store::KeyString;

// The rules a job must satisfy to run, after defaulting (api::v1::SetDefaults): what its
// manifest would be held to in decoding (api::v1::codec::RecodeJob), the kind's validation
// (api/v1/validation.h) and coach's own annotations. Admission applies them to
// every job created through the API; the controller to every job it finds in the store, so
// one that arrived another way (kubectl apply) is held to the same rules.
// InvalidArgument names every failing field.
// `mlflow`: the operator's MLflow settings (the servers a job may name).
absl::Status CheckJobSpec(const api::v1::TrainingJob& defaulted, const model::MlflowConfig& mlflow);

struct CreateRequest {
  // Exactly one of `job` and `manifest` (YAML or JSON, one kubeflow.org/v1 job).
  std::optional<api::v1::TrainingJob> job;
  std::string manifest;
  // Applies when the job names no namespace; "default" when empty too.
  std::string namespace_;
  bool dry_run = false;
};

struct ListRequest {
  std::string namespace_;      // empty: every namespace
  std::string label_selector;  // see label_selector.h
  int page_size = 0;           // 0: default; above the max: the max
  std::string page_token;
};

struct ListResponse {
  std::vector<api::v1::TrainingJob> jobs;
  std::string next_page_token;  // empty on the last page
};

struct ReplicaInfo {
  std::string name;
  std::string replica_type;
  int index = 0;
  std::string phase;  // "Pending", "Running", ...
  int restarts = 0;
  std::optional<int> exit_code;
  std::string message;
};

// A GetJobLogs request: the backend's options (options.attempt unset: the current attempt) and,
// for a deleted job, its uid.
struct LogRequest {
  backend::LogOptions options;
  std::string uid;
};

// Log bytes with where they come from ("live", "kept/local", "kept/store", "kept/mlflow") and
// the attempt they are of; returning false stops the stream.
using SourcedLogSink = std::function<bool(const std::string& replica, const std::string& data,
                                          const std::string& source, int attempt)>;

struct JobDescription {
  api::v1::TrainingJob job;
  std::vector<ReplicaInfo> replicas;
  std::vector<store::JobEvent> events;  // oldest first
};

// The framework label value ("pytorch") of a job's kind; "unknown" when unset.
std::string FrameworkOf(const api::v1::TrainingJob& job);

class JobService {
 public:
  struct Options {
    int default_page_size = 100;
    int max_page_size = 1000;
    // Suspend/Resume retries on a resourceVersion conflict.
    int conflict_retries = 10;
    // The operator's MLflow settings, for CheckJobSpec.
    model::MlflowConfig mlflow;
    // The time a TrainJob's runtimePatches are stamped with at admission.
    Clock* clock = Clock::Real();
  };

  // None of the pointers is owned; all must outlive the service. `metrics` may be null.
  JobService(JobStore* store, backend::Backend* backend, WatchBroadcaster* watchers,
             KeyedMutex* job_locks, metrics::OperatorMetrics* metrics, Options options);
  JobService(JobStore* store, backend::Backend* backend, WatchBroadcaster* watchers,
             KeyedMutex* job_locks, metrics::OperatorMetrics* metrics)
      : JobService(store, backend, watchers, job_locks, metrics, Options()) {}

  // Called with every job that changed through the API (the controller's Enqueue), with
  // store::KeyOf the job (its kind included). KeyString of that key is the job's KeyLock.
  void SetEnqueue(std::function<void(const JobKey&)> enqueue);
  // Called with every job deleted (Delete, and the controller's TTL deletion through
  // DeleteLocked), as it was last stored, right after the store deleted it and under its
  // KeyLock: the controller takes what it counted for the job from that (a finished job may have
  // no entry of its own there; controller.h).
  void SetDeleted(std::function<void(const api::v1::TrainingJob&)> deleted);
  // Told before a job is deleted (job_observer.h). Not owned; null to remove. Set before
  // serving.
  void SetObserver(JobObserver* observer) { observer_ = observer; }
  // Where earlier attempts' logs and deleted jobs' histories are read from. May stay null.
  void SetHistory(history::LogKeeper* history) { history_ = history; }

  // Parse (manifest) or recode (job: api::v1::codec::RecodeJob, so that a job is held to every
  // rule its manifest would be, with the same messages), namespace, SetDefaults, CheckJobSpec.
  // Stores nothing. Errors: InvalidArgument; a manifest's decoding problems start "manifest: ".
  absl::StatusOr<api::v1::TrainingJob> Admission(const CreateRequest& request) const;

  // Admission, then (unless dry_run) store -> backend Admit -> publish ADDED -> enqueue.
  // When Admit fails the stored job is removed again and Admit's error is returned.
  absl::StatusOr<api::v1::TrainingJob> Create(const CreateRequest& request);
  absl::StatusOr<api::v1::TrainingJob> Get(const std::string& ns, const std::string& name);
  absl::StatusOr<ListResponse> List(const ListRequest& request);
  // Backend Forget, then store Delete; publishes DELETED.
  absl::Status Delete(const std::string& ns, const std::string& name);
  absl::StatusOr<api::v1::TrainingJob> Suspend(const std::string& ns, const std::string& name);
  absl::StatusOr<api::v1::TrainingJob> Resume(const std::string& ns, const std::string& name);
  absl::StatusOr<JobDescription> Describe(const std::string& ns, const std::string& name);
  absl::Status Logs(const std::string& ns, const std::string& name,
                    const backend::LogOptions& options, const backend::LogSink& sink,
                    const std::atomic<bool>& cancelled);
  // The live replicas' logs of the current attempt; an earlier attempt's, or the current one's
  // once its pods are gone, from where they were kept (the local backend's attempt folders, the
  // history store, the job's MLflow run); a deleted job's (request.uid) from the history store.
  // Errors: InvalidArgument naming the field, NotFound (no such job, attempt, or kept log; the
  // message says which), FailedPrecondition (uid given and no history store).
  absl::Status Logs(const std::string& ns, const std::string& name, const LogRequest& request,
                    const SourcedLogSink& sink, const std::atomic<bool>& cancelled);
  // Deleted jobs' histories (history::LogKeeper::ListDeleted). page_size 0: 100; at most 1000.
  absl::StatusOr<std::vector<api::v1::JobHistory>> Histories(const std::string& ns,
                                                             const std::string& name, int page_size,
                                                             bool* truncated);
  // Subscribes to the matching jobs: ADDED for each now, then every change.
  // Errors: InvalidArgument (selector), Unavailable (shutting down).
  absl::StatusOr<std::shared_ptr<Subscription>> Watch(const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& label_selector);

  // Forgets the job in the backend and deletes it from the store, publishing DELETED
  // and counting the deletion. The caller holds the job's KeyLock. Used by Delete and by
  // the controller (TTL).
  absl::Status DeleteLocked(const api::v1::TrainingJob& job);

 private:
  absl::StatusOr<api::v1::TrainingJob> SetSuspend(const std::string& ns, const std::string& name,
                                                  bool suspend);
  void Enqueue(const JobKey& key);

  JobStore* const store_;
  backend::Backend* const backend_;
  WatchBroadcaster* const watchers_;
  KeyedMutex* const job_locks_;
  metrics::OperatorMetrics* const metrics_;
  const Options options_;
  std::function<void(const JobKey&)> enqueue_;
  std::function<void(const api::v1::TrainingJob&)> deleted_;
  JobObserver* observer_ = nullptr;
  history::LogKeeper* history_ = nullptr;
};

}  // namespace coach::core
