#pragma once

// Controller: drives every stored job towards its spec through any Backend.
//
// A work queue of job keys (work_queue.h: one worker per key at a time, a key added
// while processed is processed again) served by N workers. One pass over a job:
//   store.Get -> (first pass in this process: backend.Admit) -> AddressPlanFor + Observe
//   -> reconcile::Reconcile(job, observed, clock.Now(), config) -> apply the actions in
//   order (kDeleteJob: forget + delete the job, counted as a TTL deletion) -> UpdateStatus
//   only when status_changed (Aborted: reconcile again at once) -> append the events ->
//   publish MODIFIED -> requeue_at.
// The pass never touches the work queue, and writes no metric itself: it returns what the queue
// should do with its key (PassResult, or the error that failed it) and fills what the metrics
// count (PassRecord, controller_metrics.h; a TTL deletion also reaches ControllerMetrics through
// JobService's deletion hook). The worker loop alone applies the result to the queue: a
// failing pass is retried with exponential backoff (WorkQueue::AddRateLimited, on the clock's
// monotonic reading); a pass that applied actions is followed by another one, so the result is
// observed even from a backend that does not call back on its own creations.
//
// Start() registers the backend's change callback, starts the backend and enqueues
// every stored job (an operator restart resumes all of them; pod names are
// deterministic, so nothing is created twice). Stop() stops handing out work, waits
// for the passes in flight and stops the backend (replicas keep running).
//
// Keys: store::KeyOf(job), {namespace, name, kind}, so that on Kubernetes (where a name is
// unique per kind only) a PyTorchJob and a TFJob of one name are two jobs end to end: queue,
// KeyLock, admission, gauges, status, events, TTL deletion and timers. A key without a kind
// given to Enqueue (a backend's change callback, which knows a job by its name label only)
// stands for every kind of that name the controller has been told of: it keeps that index
// (kinds_) rather than have each backend find the kind, so both backends and every caller
// that knows a name only are served by one rule. Every job is told of before it has replicas
// (Create, Start's resume, the change feed), so no wake-up is lost.
//
// Finished jobs (Options::forget_finished_jobs, the local backend): a store of thousands of
// finished jobs must not cost an entry each. A finished job whose replicas its
// stored status accounts for (StoredGauge) keeps nothing here: its gauges stay in the totals,
// and the next time a pass or a deletion meets it, what it was counted as is read again from
// the job as stored (Start counts every stored finished job that way before any pass;
// ControllerMetrics keeps the gauges, controller_metrics.h). Its
// kind is not indexed either: a name-only wake-up for a name the index does not know reads the
// job of that name from the store (the local store keeps names unique across kinds). That
// takes a store whose jobs' status only the controller writes and whose jobs are deleted only
// through JobService or the controller (which tell it, JobService::SetDeleted); on Kubernetes
// kubectl does both, so there every job keeps its entries.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/backend/progress_receiver.h"
#include "operator/core/controller_metrics.h"
#include "operator/core/job_observer.h"
#include "operator/core/job_service.h"
#include "operator/core/keyed_mutex.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/core/work_queue.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/model/reconcile_types.h"
#include "operator/store/job_store.h"

namespace coach::core {

// What one successful pass over a key asks of the work queue. The pass only says it; the
// worker loop applies it (Controller::Worker), in this order, before Done:
//   Forget(key)                  always: the key's backoff starts over;
//   Add(key)                     when `requeue` is not kNo;
//   AddAt(key, at)               when `wake` is not kNo.
// `requeue` and `wake` are independent: a pass that applied actions on a job with an active
// deadline asks for both. A pass that fails asks for nothing: its error (ReconcileKey's
// status) makes the worker retry the key after its backoff (AddRateLimited) without Forget.
// An OK pass that asks for neither leaves the key until something changes (a store write, a
// backend's change callback, Enqueue).
struct PassResult {
  // Why the key is queued again as soon as the pass is done.
  enum class Requeue : uint8_t {
    kNo,
    // The pass applied actions: the next one observes their result.
    kApplied,
    // The backend refused a create as invalid (no retry can change that): the next pass fails
    // the job with the refusal.
    kRefusedCreate,
    // The status write was Aborted (the job changed meanwhile: Suspend, Resume): the next
    // pass starts over from the store.
    kConflict,
  };
  // Why the key is queued once the clock's wall time reaches `at`. Wall time, not a duration:
  // both are points in time, the reconciler's computed from times in the job's status.
  enum class Wake : uint8_t {
    kNo,
    // The reconciler's requeue_at: a rule that fires later without any pod event (an active
    // deadline, a finished job's TTL).
    kRequeueAt,
    // The observer holds the job's first replicas back until `at`
    // (JobObserver::HoldStartUntil): the pass stopped before reconciling.
    kHeld,
  };

  Requeue requeue = Requeue::kNo;
  Wake wake = Wake::kNo;
  absl::Time at = absl::InfinitePast();  // meaningful when wake != kNo

  // Nothing to do until something changes.
  static PassResult Done() { return {}; }
  static PassResult Again(Requeue why) { return {why, Wake::kNo, absl::InfinitePast()}; }
  static PassResult HeldUntil(absl::Time at) { return {Requeue::kNo, Wake::kHeld, at}; }

  bool operator==(const PassResult& o) const {
    return requeue == o.requeue && wake == o.wake && (wake == Wake::kNo || at == o.at);
  }
  bool operator!=(const PassResult& o) const { return !(*this == o); }
  // "requeue=applied wake=requeue_at@2023-11-14T22:13:20+00:00" (test messages, debugging).
  std::string ToString() const;
};

class Controller {
 public:
  struct Options {
    int workers = 2;
    model::ReconcileConfig config;
    WorkQueueOptions queue;
    // Not owned; may be null. Told about every job after each pass (job_observer.h), and
    // asked before a job's first replica starts whether to hold it back a moment.
    JobObserver* observer = nullptr;
    // Keep no per-job entry for a finished job whose replicas its stored status accounts for
    // (see the header comment): true for the local backend's store only.
    bool forget_finished_jobs = false;
  };

  // Nothing is owned; everything must outlive the controller. `metrics` may be null.
  // Installs itself as `jobs`' enqueue hook.
  Controller(JobStore* store, backend::Backend* backend, JobService* jobs,
             WatchBroadcaster* watchers, KeyedMutex* job_locks, Clock* clock,
             metrics::OperatorMetrics* metrics, Options options);
  ~Controller();  // Stop()

  // Errors: the backend's Start error; the store's List error. Call once.
  absl::Status Start();
  // Idempotent.
  void Stop();
  // True between a successful Start() and Stop().
  bool running() const;

  // A key without a kind wakes every known kind of that name (see the header comment).
  void Enqueue(const JobKey& key);

  // Where checkpoint requests reach the jobs' pods (ApiServer::checkpoints); from now on a
  // job-scoped job's running pod's notice makes its ranks save first (reconcile/notice.h). Not
  // owned; must outlive the controller. May be called while it runs.
  void SetCheckpointChannel(backend::CheckpointChannel* channel) { checkpoints_ = channel; }

  // One pass over `key` (with its kind), on the calling thread, under the job's KeyLock (tests;
  // the workers call it too). Touches no queue: returns what to do with the key (PassResult),
  // or the error that made the pass fail (the worker retries the key after its backoff). Records
  // what the pass did in the metrics once, at its end, failed or not.
  absl::StatusOr<PassResult> ReconcileKey(const JobKey& key);

  BasicWorkQueue<JobKey>& queue() { return queue_; }

  // How many entries the controller holds per kind of per-job state (tests of what a store of
  // finished jobs costs).
  struct PerJobEntries {
    size_t admitted = 0;
    size_t kinds = 0;
    size_t gauges = 0;
    size_t spec_checks = 0;
    size_t refused = 0;
    size_t total() const { return admitted + kinds + gauges + spec_checks + refused; }
  };
  PerJobEntries Entries() const;
  // Passes completed since Start (the allocator trim in main.cc runs after a burst of them).
  int64_t passes() const;

 private:
  // The index of kinds by name (see the header comment).
  void RememberKey(const JobKey& key);
  void ForgetKey(const JobKey& key);
  void Worker();
  // Applies a pass's outcome to the queue (PassResult's contract).
  void ApplyToQueue(const JobKey& key, const absl::StatusOr<PassResult>& result);
  void UpdateQueueGauges();
  // The pass proper (ReconcileKey holds the KeyLock and records `record`).
  absl::StatusOr<PassResult> Pass(const JobKey& key, PassRecord* record);
  // Drops what RefusalOf and admission keep for `key`.
  void ForgetChecks(const JobKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Why `job` cannot run as written ("" when it can): CheckJobSpec, once per generation,
  // then a refusal the API server gave one of its objects.
  std::string RefusalOf(const JobKey& key, const model::Job& job);
  // After a failed ApplyAll: a Warning event per refused create, as upstream's
  // FailedCreatePod / FailedCreateService. Returns the refusal that fails the job (an
  // object refused as invalid, which no retry can change), else "".
  std::string RecordRefusedCreates(const JobKey& job_key, const model::Job& job,
                                   const std::vector<model::Action>& batch,
                                   const std::vector<absl::Status>& results, absl::Time now);
  // Tells the observer which of the pods `batch` deletes have run (their logs are kept).
  void NotePodsDeleting(const model::Job& job, const model::ObservedState& observed,
                        const std::vector<model::Action>& batch);

  JobStore* const store_;
  backend::Backend* const backend_;
  JobService* const jobs_;
  WatchBroadcaster* const watchers_;
  KeyedMutex* const job_locks_;
  Clock* const clock_;
  const Options options_;
  ControllerMetrics metrics_;
  BasicWorkQueue<JobKey> queue_;

  mutable absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Unfinished jobs admitted in this process (a finished one needs nothing admitted: not kept).
  std::set<JobKey> admitted_ ABSL_GUARDED_BY(mu_);
  // {namespace, name} -> the kinds of that name the controller was told of (with
  // forget_finished_jobs: of its unfinished jobs only).
  std::map<JobKey, std::set<std::string>> kinds_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> passes_{0};
  std::atomic<backend::CheckpointChannel*> checkpoints_{nullptr};
  // RefusalOf's memory per key: the generation last checked and what the check said, and the
  // API server's refusal of an object (kept until the job is finished or gone).
  struct SpecCheck {
    int64_t generation = -1;
    std::string problem;
  };
  std::map<JobKey, SpecCheck> spec_checks_ ABSL_GUARDED_BY(mu_);
  std::map<JobKey, std::string> refused_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace coach::core
