#pragma once

// CrJobStore: the JobStore of the Kubernetes backend. Jobs are the custom resources themselves
// (the kubeflow.org/v1 kinds and TrainJobs, coach's CRDs with the status subresource), so
// kubectl sees every job coach stores and coach sees every job kubectl applies. How it reads,
// lists, watches and records events: docs/architecture.md, "The custom-resource job store".
//
// Error codes, beyond store::JobStore's:
//   Create        FailedPrecondition for a namespace outside options.namespaces (no request).
//   Update, UpdateStatus, Delete: Aborted on a stale resourceVersion (409).
//   a key without a kind: NotFound when no kind has the name; FailedPrecondition naming each
//                 kind when two or more do ("name the kind: pytorchjobs/x or tfjobs/x"). A key
//                 may name its kind as "<kind>/<name>" (TFJob, tfjobs or tfjob).
//   AppendEvent(s) asynchronous; NotFound for a missing job; ResourceExhausted when some were
//                 dropped over a queue bound. FlushEvents waits for them; StopEvents writes them
//                 at shutdown.
//   ListEvents    never fails for want of events (no RBAC to list them: empty, a warning).
// Invariants: GetCached never returns a copy older than this store's own last write. List pages
// are not a snapshot: a job created meanwhile after the cursor is seen, before it is not. The
// change callback runs on a reflector's thread for every change, whoever made it, and must not
// block for long.
//
// Thread-safe.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/reflector.h"
#include "operator/backend/kube/cr_watch_cache.h"
#include "operator/backend/kube/event_recorder.h"
#include "operator/store/job_store.h"

namespace coach::backend::kube {

using store::JobEvent;
using store::JobKey;

struct CrJobStoreOptions {
  // Empty: every namespace.
  std::vector<std::string> namespaces;
  ::coach::kubeclient::PropagationPolicy delete_propagation =
      ::coach::kubeclient::PropagationPolicy::kBackground;
  // Items per page of the server-side lists.
  int64_t list_chunk = 500;
  int max_events_per_append = 32;
  size_t max_event_message_bytes = 1024;
  int max_events_listed = 100;
  // Event source.component.
  std::string event_component = "coach-operator";
  // The event recorder (its component and message limit come from the fields above).
  EventRecorderOptions event_recorder;
  // Jobs read (Get, List, Create/Update results, the change feed) get api::v1::SetDefaults,
  // as upstream defaults every job it reconciles: a job applied with kubectl never went
  // through coach's admission. Idempotent; a later Update stores the defaults.
  bool apply_defaults = true;
  // Reflector settings of the change feed (tests shorten the backoff).
  ::coach::kubeclient::ReflectorOptions reflector;
};

enum class JobChangeType { kAdded, kModified, kDeleted };

struct JobChange {
  JobChangeType type = JobChangeType::kAdded;
  // With the kind whose watch saw the change ("PyTorchJob"), also for a re-list's DELETED
  // without an object: the key that names this job only, whatever other kind has the name
  // (what the controller must reconcile).
  JobKey key;
  // The decoded object (for kDeleted: its last state); nullopt when it could not be decoded
  // (logged) or a re-list found the job gone.
  std::optional<api::v1::TrainingJob> job;
};

using JobChangeCallback = std::function<void(const JobChange& change)>;

class CrJobStore : public store::JobStore {
 public:
  // `client` is not owned and must outlive the store. Errors: InvalidArgument (options).
  static absl::StatusOr<std::unique_ptr<CrJobStore>> Create(::coach::kubeclient::KubeClient* client,
                                                            CrJobStoreOptions options);
  ~CrJobStore() override;  // StopWatching()

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override;
  absl::StatusOr<api::v1::TrainingJob> GetCached(const JobKey& key) override;
  absl::StatusOr<store::ListResult> List(const store::ListOptions& options) override;
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override;
  absl::Status Delete(const JobKey& key, std::optional<std::string> resource_version) override;

  absl::Status AppendEvent(const JobKey& job, const JobEvent& event) override;
  absl::Status AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) override;
  absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) override;
  // Waits until the events appended so far are written. False on timeout.
  bool FlushEvents(absl::Duration timeout);
  // At shutdown, after the controller stopped: writes the queued events for up to `grace`
  // (without the event budget), counts and logs the rest; later events are dropped (and
  // counted). EventRecorder::Stop.
  void StopEvents(absl::Duration grace);
  EventRecorder::Counts EventCounts() const;
  // coach_kube_events_total{outcome} and coach_kube_events_queued (EventRecorder).
  void ExportEventMetrics(::coach::metrics::Registry* registry);

  // Starts the change feed (threads; see the header comment). `callback` may be null (the
  // kind index is still kept). Errors: FailedPrecondition (already started).
  absl::Status StartWatching(JobChangeCallback callback);
  // True once every reflector has listed at least once; waits up to `timeout` for it.
  bool WaitForSync(absl::Duration timeout);
  // Stops and joins the reflectors. Idempotent.
  void StopWatching();

  // The kind (index into api::v1::AllKinds()) and uid the store knows for a job, as the kind
  // rule reads them: for tests and diagnostics.
  std::map<int, std::string> KnownKinds(const JobKey& key) const;

 private:
  CrJobStore(::coach::kubeclient::KubeClient* client, CrJobStoreOptions options);

  // The job (decoded) and its kind index, by the kind rule.
  struct Found {
    int kind = -1;
    nlohmann::json object;
  };
  absl::StatusOr<Found> Resolve(const JobKey& key);
  // Update (status false) or UpdateStatus (true).
  absl::StatusOr<api::v1::TrainingJob> Write(const api::v1::TrainingJob& job, bool status);
  absl::StatusOr<api::v1::TrainingJob> Decode(const nlohmann::json& object) const;
  // Aborted from a PUT: NotFound when the object is gone, else `conflict`.
  absl::Status ConflictOrMissing(int kind, const JobKey& key, absl::Status conflict);
  // For events: kind index and uid of a job, from the index or a Get.
  absl::StatusOr<std::pair<int, std::string>> KindAndUid(const JobKey& key);

  void Remember(const JobKey& key, int kind, const std::string& uid);
  // After an Update/UpdateStatus: GetCached reads from the server until the watch delivers
  // `resource_version` (the version written), or, when "" (the write conflicted), any event.
  void AwaitWatch(const JobKey& key, int kind, const std::string& resource_version);
  void Forget(const JobKey& key, int kind);
  void OnReplace(int kind, const std::string& ns, const std::vector<nlohmann::json>& items);
  void OnEvent(int kind, const ::coach::kubeclient::WatchEvent& event);
  void Notify(JobChangeType type, int kind, const JobKey& key, const nlohmann::json* object);

  ::coach::kubeclient::KubeClient* const client_;
  const CrJobStoreOptions options_;
  std::unique_ptr<EventRecorder> recorder_;

  // The kind index (fed by the watch and by this store's own calls), the watch's copies that
  // GetCached serves, and what has synced.
  CrWatchCache watch_;
  JobChangeCallback callback_;
  std::vector<std::unique_ptr<::coach::kubeclient::Reflector>> reflectors_;
  std::vector<std::thread> threads_;
};

}  // namespace coach::backend::kube
