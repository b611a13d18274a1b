#pragma once

// Controller: drives every stored job towards its spec through any Backend.
//
// A work queue of job keys (work_queue.h: one worker per key at a time, a key added
// while processed is processed again) served by N workers. One pass over a job:
//   store.Get -> (first pass in this process: backend.Admit) -> AddressPlanFor + Observe
//   -> reconcile::Reconcile(job, observed, clock.Now(), config) -> apply the actions in
//   order (kDeleteJob: forget + delete the job, counted as a TTL deletion) -> UpdateStatus
//   only when status_changed (Aborted: reconcile again at once) -> append the events ->
//   publish MODIFIED -> AddAt(requeue_at).
// A failing pass is retried with exponential backoff (WorkQueue::AddRateLimited). A pass
// that applied actions is followed by another one, so the result is observed even from
// a backend that does not call back on its own creations.
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
// the job as stored (Start counts every stored finished job that way before any pass). Its
// kind is not indexed either: a name-only wake-up for a name the index does not know reads the
// job of that name from the store (the local store keeps names unique across kinds). That
// takes a store whose jobs' status only the controller writes and whose jobs are deleted only
// through JobService or the controller (which tell it, JobService::SetDeleted); on Kubernetes
// kubectl does both, so there every job keeps its entries.
//
// Thread-safe.

#include <array>
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
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/core/job_observer.h"
#include "operator/core/job_service.h"
#include "operator/core/keyed_mutex.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/core/work_queue.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/model/reconcile_types.h"
#include "operator/store/job_store.h"

namespace coach::core {

// What the gauges count for one job: its replicas by phase (indexed by model::PodPhase) and its
// state (an index into JobState's values, in controller.cc's kStates order). Small on purpose:
// one is kept per job (maps of strings here cost ~400 bytes a job).
struct JobGauge {
  std::array<int32_t, 5> phases{};
  uint8_t state = 0;
  bool operator==(const JobGauge& o) const { return phases == o.phases && state == o.state; }
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

  // One pass over `key` (with its kind), on the calling thread (tests; the workers call it
  // too). Returns the error that made the pass fail (the worker retries with backoff).
  absl::Status ReconcileKey(const JobKey& key);

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
  void UpdateQueueGauges();
  // What the gauges count for a job after a pass: `observed` and its status after the pass;
  // null: the job is gone and counts no more. `counted_as`: what the totals hold for it while
  // it has no entry (a finished job with forget_finished_jobs: StoredGauge of its status as the
  // pass read it), else null.
  void RecordObserved(const JobKey& key, const JobGauge* counted_as,
                      const model::ObservedState* observed, const model::JobStatus* after);
  // A job JobService deleted (SetDeleted), as last stored.
  void JobDeleted(const model::Job& job);
  // Adds (sign 1) or takes (-1) `gauge` to or from the totals.
  void AddToTotals(const JobGauge& gauge, int sign) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the replicas and jobs gauges to the totals.
  void PublishTotals() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops what RefusalOf and admission keep for `key`.
  void ForgetChecks(const JobKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CountTransitions(const model::Job& job, const model::JobStatus& before,
                        const model::JobStatus& after);
  // Why `job` cannot run as written ("" when it can): CheckJobSpec, once per generation,
  // then a refusal the API server gave one of its objects.
  std::string RefusalOf(const JobKey& key, const model::Job& job);
  // After a failed ApplyAll: a Warning event per refused create, as upstream's
  // FailedCreatePod / FailedCreateService. Returns the refusal that fails the job (an
  // object refused as invalid, which no retry can change), else "".
  std::string RecordRefusedCreates(const JobKey& job_key, const model::Job& job,
                                   const std::vector<model::Action>& batch,
                                   const std::vector<absl::Status>& results, absl::Time now);

  JobStore* const store_;
  backend::Backend* const backend_;
  JobService* const jobs_;
  WatchBroadcaster* const watchers_;
  KeyedMutex* const job_locks_;
  Clock* const clock_;
  metrics::OperatorMetrics* const metrics_;
  const Options options_;
  BasicWorkQueue<JobKey> queue_;

  mutable absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Unfinished jobs admitted in this process (a finished one needs nothing admitted: not kept).
  std::set<JobKey> admitted_ ABSL_GUARDED_BY(mu_);
  // {namespace, name} -> the kinds of that name the controller was told of (with
  // forget_finished_jobs: of its unfinished jobs only).
  std::map<JobKey, std::set<std::string>> kinds_ ABSL_GUARDED_BY(mu_);
  // Per job, for the gauges. Kept for every job told of, except a finished one whose stored
  // status says the same (forget_finished_jobs; header comment).
  std::map<JobKey, JobGauge> gauges_ ABSL_GUARDED_BY(mu_);
  // Sums of every job's phases and counts of their states, kept as they change: those of the
  // entries above plus, with forget_finished_jobs, StoredGauge of each finished job without one.
  std::array<int64_t, 5> phase_totals_ ABSL_GUARDED_BY(mu_){};
  std::array<int64_t, 6> state_totals_ ABSL_GUARDED_BY(mu_){};
  std::atomic<int64_t> passes_{0};
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

// "Succeeded", "Failed", "Suspended", "Restarting", "Running" or "Created".
std::string JobState(const model::JobStatus& status);

// What the gauges count for a job: its observed replicas by phase and its state.
JobGauge ObservedGauge(const model::ObservedState& observed, const model::JobStatus& status);
// What the gauges count for a finished job that has no entry (forget_finished_jobs), from its
// stored status alone: its replica counts (active as Running, succeeded, failed) and its state.
// A job whose observed replicas differ (one the status does not count: Pending, Unknown, or one
// deleted under cleanPodPolicy All or Running) keeps its entry.
JobGauge StoredGauge(const model::JobStatus& status);

}  // namespace coach::core
