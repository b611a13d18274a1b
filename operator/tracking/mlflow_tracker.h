#pragma once

// MlflowTracker: one MLflow run per tracked job (operator/reconcile/mlflow_env.h says which
// jobs are tracked and where), kept off the reconcile path. What lands in the run:
// docs/mlflow.md; how the work is queued, retried and waited for: docs/architecture.md,
// "Tracking (MLflow)".
//
// Callers may rely on:
//   - JobSeen/JobDeleting never wait on MLflow: they copy the job into a bounded table
//     (max_jobs; beyond it the job is not tracked and coach_mlflow_dropped_jobs_total counts it).
//   - At most one run per job, across operator restarts: its id is written onto the job
//     (coach.dev/mlflow-run-id, coach.dev/mlflow-experiment-id) through Hooks::annotate, and a
//     run created before a crash is found again by its coach.job_uid tag.
//   - HoldStartUntil holds a tracked job's first replicas until the run id is on the job, for at
//     most run_wait from the first hold; then they start without it, and the run made later is
//     tagged coach.run_incomplete=true. A job whose tracking was given up is not held.
//   - The run ends FINISHED (Succeeded), FAILED (Failed) or KILLED (deleted first), whatever the
//     training code set. A job is given up after max_permanent_failures permanent errors.
//   - Warning events: MlflowRunNotReady, MlflowRunIncomplete, MlflowTrackingFailed.
// Metrics (with a registry): coach_mlflow_errors_total{op,kind}, coach_mlflow_backlog,
// coach_mlflow_dropped_jobs_total, coach_mlflow_runs_created_total,
// coach_mlflow_runs_ended_total{status}, coach_mlflow_given_up_total.
//
// Thread-safe.

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
#include "api/v1/training_service.pb.h"
#include "common/clock.h"
#include "common/version/version.h"
#include "integrations/mlflow/tracking_client.h"
#include "operator/core/job_observer.h"
#include "operator/core/work_queue.h"
#include "operator/history/mlflow_log_sink.h"
#include "operator/metrics/registry.h"
#include "operator/model/reconcile_types.h"

namespace coach::tracking {

inline constexpr const char* kCoachVersion = ::coach::kVersion;

struct MlflowTrackerOptions {
  model::MlflowConfig mlflow;     // the operator-wide target (may be empty: annotations only)
  std::string backend = "local";  // tag coach.backend
  int workers = 2;
  size_t max_jobs = 10000;
  absl::Duration backoff_base = absl::Milliseconds(500);
  absl::Duration backoff_cap = absl::Seconds(30);
  int max_permanent_failures = 5;
  // How long a new job's first replicas may wait for its run id (0: never wait).
  absl::Duration run_wait = absl::Seconds(120);
  // While a job's replicas are held, the longest wait between its retries.
  absl::Duration held_retry_cap = absl::Seconds(2);
  // A job can finish while some replicas still run (a PyTorchJob ends with its master): the
  // training code's runs are looked for again these long after the job's run ended.
  std::vector<absl::Duration> relink_after = {absl::Seconds(15), absl::Minutes(1),
                                              absl::Minutes(5)};
  // Per replica, the log's last bytes that are uploaded.
  int64_t max_log_bytes = 16 << 20;
  // Earlier attempts' logs (KeepLogs) waiting for upload, all jobs together: beyond this a log
  // is dropped and counted in coach_mlflow_errors_total{op="upload_attempt_logs"}.
  int64_t max_pending_log_bytes = 256 << 20;
};

struct MlflowTrackerHooks {
  // A TrackingClient for a tracking URI (created once per URI, kept).
  std::function<absl::StatusOr<std::unique_ptr<mlflow::TrackingClient>>(const std::string& uri)>
      make_client;
  // Sets `annotations` on the stored job whose uid is job.metadata().uid() (NotFound when it
  // is gone) and makes the controller reconcile it.
  std::function<absl::Status(const model::Job& job,
                             const std::map<std::string, std::string>& annotations)>
      annotate;
  // Makes the controller reconcile the job soon. May be null.
  std::function<void(const model::Job& job)> wake;
  // Records an event on the job (type "Normal" or "Warning"). May be null. A failure is
  // logged, not retried.
  std::function<absl::Status(const model::Job& job, const std::string& type,
                             const std::string& reason, const std::string& message,
                             absl::Time time)>
      event;
  // Each replica's log ("master-0" -> text), as it is now. May be null (no logs uploaded).
  std::function<absl::StatusOr<std::map<std::string, std::string>>(const model::Job& job,
                                                                   int64_t max_bytes)>
      read_logs;
};

class MlflowTracker final : public core::JobObserver, public history::MlflowLogSink {
 public:
  // `clock` and `registry` are not owned; `registry` may be null.
  MlflowTracker(MlflowTrackerOptions options, MlflowTrackerHooks hooks, ::coach::Clock* clock,
                metrics::Registry* registry);
  ~MlflowTracker() override;  // Stop(absl::ZeroDuration())

  void Start();
  // Waits up to `drain` for pending work, then stops the workers (a call in flight finishes or
  // times out by the client's own timeout). What is left resumes after a restart (the job's
  // annotations and the run's state say where it stopped).
  void Stop(absl::Duration drain);

  void JobSeen(const model::Job& job) override;
  void JobDeleting(const model::Job& job) override;
  std::optional<absl::Time> HoldStartUntil(const model::Job& job) override;

  // history::MlflowLogSink: an attempt's logs as artifacts logs/attempt-<n>/<replica>.log of the
  // job's run (uploaded by the job's worker, before its final logs), and read back.
  bool Tracks(const model::Job& job) override;
  void KeepLogs(const model::Job& job, int attempt,
                std::map<std::string, std::string> logs) override;
  absl::StatusOr<std::string> ReadLog(const model::Job& job, int attempt,
                                      const std::string& replica) override;
  // mlflow_history.cc: a deleted job's record in its run, and the records found again.
  absl::StatusOr<std::vector<std::string>> ReplicasOf(const model::Job& job, int attempt) override;
  void KeepRecord(api::v1::JobHistory record, bool read_logs) override;
  absl::StatusOr<std::vector<api::v1::JobHistory>> ListDeleted(const std::string& ns,
                                                               const std::string& name, int max,
                                                               bool* truncated) override;
  absl::StatusOr<api::v1::JobHistory> DeletedRecord(const std::string& ns, const std::string& name,
                                                    const std::string& uid) override;

  // Waits until no job has pending work, or `timeout`: false then (tests).
  bool WaitIdle(absl::Duration timeout);

  struct Stats {
    int64_t runs_created = 0;
    int64_t runs_ended = 0;
    int64_t errors = 0;
    int64_t dropped_jobs = 0;
    int64_t given_up = 0;
    size_t backlog = 0;
  };
  Stats stats() const;

 private:
  // What Sync has done for a job so far. Sync updates a copy step by step and saves it whole
  // (Save) as it goes, so a field added here is kept like the others. It lives in memory only: a
  // restarted operator starts from an empty one, and the job's annotations and the run's tags
  // (coach.job_uid, coach.run_ended) say where the job stands.
  struct SyncProgress {
    std::string uri;  // the tracking server the job's run is on
    std::string experiment_id;
    std::string run_id;
    bool run_checked = false;  // a found run's status was read (finished jobs after a restart)
    bool annotated = false;    // the run and experiment ids are on the job (or it is gone)
    bool incomplete_tagged = false;                // coach.run_incomplete is on the run
    bool params_logged = false;                    // RunParams are on the run
    std::map<std::string, std::string> tags_sent;  // the condition tags as last sent
    bool logs_uploaded = false;
    // "attempt-<n>/<replica>" uploaded from KeepLogs: the final logs do not overwrite them.
    std::set<std::string> attempt_logs_uploaded;
    bool runs_linked = false;  // the code's runs were looked for once (the later looks: Relink)
    bool terminated = false;   // the run has ended with the job's outcome: nothing is left
    bool deletion_recorded = false;  // the deleted job's record is in the run (RecordDeletion)
  };

  // A job in the table. Each part has one writer: the job's snapshots come from
  // JobSeen/JobDeleting, the progress from Sync, the hold state from HoldStartUntil and the retry
  // state from the worker; Sync never saves over another part.
  struct Tracked {
    model::Job job;  // the latest snapshot
    bool deleted = false;
    std::map<std::string, std::string> final_logs;  // read at deletion
    // KeepLogs's, "attempt-<n>/<replica>" -> text, until uploaded.
    std::map<std::string, std::string> attempt_logs;
    bool have_final_logs = false;
    // KeepRecord's: the deleted job's record, and whether the logs are to be read for it
    // (nobody read them at its deletion).
    std::optional<api::v1::JobHistory> record;
    bool read_logs_when_deleted = false;
    int64_t seen = 0;  // snapshots received
    SyncProgress progress;
    // Hold state (HoldStartUntil): when this process first held the job's replicas, and whether
    // it let them start without the run id (the bound was hit).
    absl::Time hold_since = absl::InfinitePast();
    bool released_without_run = false;
    // Retry state (the worker).
    int permanent_failures = 0;
    std::string last_error;  // of the latest failed attempt, for events
    int64_t synced = -1;     // `seen` as of the last successful Sync: pending while below seen
  };

  // The later looks for the training code's runs (options_.relink_after).
  struct Relink {
    model::Job job;
    std::string uri;
    std::string experiment_id;
    std::string run_id;
    std::set<std::string> linked;  // run ids already linked
    bool deleted = false;
    size_t looks = 0;  // of options_.relink_after, done
  };

  void Worker();
  // Links the code's runs of a job whose run has ended; `relink` says whether this is the second
  // look (only new runs get Events then).
  absl::Status LinkRuns(const std::string& uid, Relink& relink, mlflow::TrackingClient& client,
                        bool second_look);
  // A later look for the code's runs of a job whose run has ended (options_.relink_after), then
  // the next one queued. Best effort: a failure is logged, not retried.
  void LookAgain(const std::string& uid, Relink relink, std::string* op);

  // One attempt at everything the job still needs: the steps below, in their order, on one
  // SyncContext. A step that has nothing left to do returns OK at once; one whose call fails
  // returns the error, which ends the attempt (the worker retries it with backoff, the steps done
  // so far being saved); a job whose run has ended is then forgotten. `op` names the failing
  // call.
  absl::Status Sync(const std::string& uid, std::string* op);
  struct SyncContext;  // mlflow_sync_steps.cc
  // The experiment's id: the target's, else cached for the URI and name, else created.
  absl::Status EnsureExperiment(SyncContext& ctx);
  // The run's id: the job's annotation's, else the run tagged with the job's uid, else NewRun's.
  absl::Status EnsureRun(SyncContext& ctx);
  absl::Status NewRun(SyncContext& ctx);
  // A run found for an ending job (after a restart): whether the operator ended it already.
  absl::Status CheckRunEnded(SyncContext& ctx);
  // The run and experiment ids onto the job (hooks_.annotate).
  absl::Status AnnotateJob(SyncContext& ctx);
  // The server answered: its URI is no longer failing, and the hold state is read again.
  void NoteServerAnswered(SyncContext& ctx);
  // coach.run_incomplete on a run whose job's replicas were released without its id.
  absl::Status TagIncomplete(SyncContext& ctx);
  absl::Status LogParams(SyncContext& ctx);
  // The condition tags that changed since last sent.
  absl::Status LogConditionTags(SyncContext& ctx);
  // KeepLogs's logs, each taken off the table once uploaded.
  absl::Status UploadAttemptLogs(SyncContext& ctx);
  // This and the next two act only for an ending job (finished or deleted): every replica's log
  // as an artifact.
  absl::Status UploadLogs(SyncContext& ctx);
  // The code's runs linked (LinkRuns), and the later looks queued.
  absl::Status LinkCodeRuns(SyncContext& ctx);
  // The run's final status, end time and coach.run_ended.
  absl::Status EndRun(SyncContext& ctx);
  // A deleted job's record (KeepRecord) into its ended run, its kept logs listed, once no
  // attempt's logs wait for upload (mlflow_history.cc).
  absl::Status RecordDeletion(SyncContext& ctx);
  // A job whose run has ended leaves the table.
  void ForgetEnded(const SyncContext& ctx);
  // Saves ctx's progress, whole, into the table (when the job is still there).
  void Save(const SyncContext& ctx);

  absl::StatusOr<mlflow::TrackingClient*> ClientFor(const std::string& uri);
  // Runs that keep a deleted job's record, on every tracking server known (mlflow_history.cc).
  struct FoundRun {
    mlflow::TrackingClient* client;
    std::string run_id;
  };
  absl::StatusOr<std::vector<FoundRun>> FindRecordRuns(const std::string& filter, int max);
  absl::StatusOr<api::v1::JobHistory> ReadRecord(const FoundRun& run);
  void Enqueue(const model::Job& job, bool deleted, std::map<std::string, std::string> logs,
               bool have_logs);
  void UpdateBacklog() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountError(const std::string& op, const absl::Status& status);
  // Through hooks_.event, when there is one.
  void Event(const model::Job& job, const std::string& type, const std::string& reason,
             const std::string& message);
  void IncompleteEvent(const model::Job& job, const std::string& run_id);
  std::string IncompleteReason() const;

  const MlflowTrackerOptions options_;
  const MlflowTrackerHooks hooks_;
  ::coach::Clock* const clock_;
  core::WorkQueue queue_;
  metrics::Family* errors_ = nullptr;
  metrics::Family* backlog_ = nullptr;
  metrics::Family* dropped_ = nullptr;
  metrics::Family* created_ = nullptr;
  metrics::Family* ended_ = nullptr;
  metrics::Family* given_up_ = nullptr;

  mutable absl::Mutex mu_;
  absl::CondVar idle_cv_;
  std::map<std::string, Tracked> jobs_ ABSL_GUARDED_BY(mu_);  // by uid
  std::set<std::string> done_ ABSL_GUARDED_BY(mu_);           // uids whose run has ended
  std::map<std::string, absl::Time> uri_failing_since_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> experiments_ ABSL_GUARDED_BY(mu_);  // uri\nname -> id
  std::map<std::string, Relink> relink_ ABSL_GUARDED_BY(mu_);            // by uid
  std::map<std::string, std::unique_ptr<mlflow::TrackingClient>> clients_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  int64_t attempt_log_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

// A deleted job's record in its run (KeepRecord): the artifact, and the tags it is found by.
inline constexpr char kRecordArtifact[] = "coach/history.json";
inline constexpr char kDeletedTag[] = "coach.deleted";
inline constexpr char kDeletedByTag[] = "coach.deleted_by";
inline constexpr char kDeletedTimeTag[] = "coach.deleted_time";

// Tags the operator sets beside those docs/mlflow.md lists. coach.run_ended=<status>: the
// operator ended the run (a restart finds nothing left to do). coach.run_incomplete=true and its
// reason: the run was created after (some of) the job's replicas started without its id.
inline constexpr char kRunEndedTag[] = "coach.run_ended";
inline constexpr char kRunIncompleteTag[] = "coach.run_incomplete";
inline constexpr char kRunIncompleteReasonTag[] = "coach.run_incomplete_reason";

// Pure pieces, exposed for tests.
// "<namespace>/<name>": the run's name, and the job in the log.
std::string JobKey(const model::Job& job);
// Params of a job's run (replica counts, restart policies, images, nprocPerNode, world size;
// a TrainJob's runtime and pod counts, nullopt until its first pass has counted its pods).
std::optional<std::vector<mlflow::Param>> RunParams(const model::Job& job);
// coach.state, coach.condition.<Type>, coach.message for a status.
std::map<std::string, std::string> ConditionTags(const model::JobStatus& status);
// Whether the job's replicas have started (a start time, or a Running, Restarting, Succeeded or
// Failed condition): a run created now comes after them, so they lack its id.
bool ReplicasStarted(const model::JobStatus& status);

}  // namespace coach::tracking
