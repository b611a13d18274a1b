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
// Thread-safe.

#include <array>
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

class Controller {
 public:
  struct Options {
    int workers = 2;
    model::ReconcileConfig config;
    WorkQueueOptions queue;
    // Not owned; may be null. Told about every job after each pass (job_observer.h), and
    // asked before a job's first replica starts whether to hold it back a moment.
    JobObserver* observer = nullptr;
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

  // What the controller holds per job (tests of what a store of finished jobs costs).
  size_t AdmittedJobs() const;

 private:
  // The index of kinds by name (see the header comment).
  void RememberKey(const JobKey& key);
  void ForgetKey(const JobKey& key);
  void Worker();
  void UpdateQueueGauges();
  void RecordObserved(const JobKey& key, const model::ObservedState* observed,
                      const model::JobStatus* status);
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
  // {namespace, name} -> the kinds of that name the controller was told of.
  std::map<JobKey, std::set<std::string>> kinds_ ABSL_GUARDED_BY(mu_);
  // Per job, for the gauges: its replica count by phase (indexed by model::PodPhase) and its
  // state (an index into JobStates()). One small entry per stored job, finished ones included:
  // maps of strings here cost ~400 bytes a job, most of a store's per-job memory (issue 13).
  struct GaugeEntry {
    std::array<int32_t, 5> phases{};
    uint8_t state = 0;
  };
  std::map<JobKey, GaugeEntry> gauges_ ABSL_GUARDED_BY(mu_);
  // Sums of phases_ and counts of states_, kept as they change.
  std::map<std::string, int> phase_totals_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> state_totals_ ABSL_GUARDED_BY(mu_);
  // RefusalOf's memory per key: the generation last checked and what the check said, and the
  // API server's refusal of an object (kept until the job is gone).
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

}  // namespace coach::core
