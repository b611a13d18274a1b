#pragma once

// ControllerMetrics: what the controller counts in operator/metrics, kept apart from the
// reconcile pass. A pass does not write a metric: it fills a PassRecord, which the controller
// hands over once (RecordPass) at the end of the pass, with the job's KeyLock still held. The
// worker loop records each pass's duration and result (PassTimed) and the work queue's size
// (QueueSize); Start and Stop say whether the backend is up.
//
// The gauges coach_replicas{phase} and coach_jobs{state} are totals over every job, kept as
// running sums: a pass changes them by its job's old and new counts (JobGauge), so it costs
// what its job holds, not what the store holds. The old counts are the job's entry here, or,
// for a finished job that has none (forget_finished_jobs), what its stored status says
// (StoredGauge). A finished job whose observed replicas its status accounts for keeps no entry:
// its counts stay in the totals, and the next time a pass or a deletion meets it they are read
// again from the job as stored (Controller::Start counts every stored finished job that way,
// CountStored, before any pass). That takes a store whose jobs' status only the controller
// writes and whose jobs are deleted only through JobService or the controller (controller.h's
// header comment); on Kubernetes every job keeps its entry.
//
// Updates of one job's gauge come with its KeyLock held (a pass; JobDeleted from JobService),
// so that a deletion and a pass over the same job never interleave their old and new counts.
//
// A null OperatorMetrics makes every method a no-op that keeps nothing. Thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"
#include "operator/store/job_store.h"

namespace coach::core {

// What the gauges count for one job: its replicas by phase (indexed by model::PodPhase) and its
// state (an index into JobState's values, in controller_metrics.cc's kStates order). Small on
// purpose: one is kept per job (maps of strings here cost ~400 bytes a job).
struct JobGauge {
  std::array<int32_t, 5> phases{};
  uint8_t state = 0;
  bool operator==(const JobGauge& o) const { return phases == o.phases && state == o.state; }
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

// What one pass did that the metrics count; filled by the pass, recorded once (RecordPass),
// whether the pass succeeded or failed.
struct PassRecord {
  // The job's gauge after the pass.
  enum class Gauge : uint8_t {
    // The pass ended before it had observed and settled the job (an error, a hold, a refused
    // create, a status conflict): the gauge stays as it was.
    kUnchanged,
    // The job is gone (not found, or deleted as its TTL expired): it counts no more.
    kGone,
    // `observed`: the job as the pass observed it and left its status.
    kObserved,
  };
  Gauge gauge = Gauge::kUnchanged;
  JobGauge observed;
  // kObserved with a finished status: StoredGauge of that status.
  std::optional<JobGauge> finished_as;
  // What the totals hold for the job while it has no entry: StoredGauge of its status as the
  // pass read it, for a finished job under forget_finished_jobs; else none.
  std::optional<JobGauge> counted_as;

  // Each action the backend attempted (coach_backend_actions_total): its type, whether it
  // succeeded.
  std::vector<std::pair<model::Action::Type, bool>> actions;

  // {namespace, framework} of the job, for the counters below.
  metrics::LabelValues job_labels;
  // Conditions that turned True in the status the pass wrote (training_operator_jobs_*).
  bool succeeded = false;
  bool failed = false;
  bool restarted = false;
  // The pass deleted the job as its ttlSecondsAfterFinished expired (coach_jobs_ttl_deleted).
  bool ttl_deleted = false;

  // Sets gauge to kObserved from what the pass observed and the status it left.
  void Observed(const model::ObservedState& state, const model::JobStatus& after);
  // Sets job_labels and the transition flags from the status before and after the pass.
  void Transitions(const model::Job& job, const model::JobStatus& before,
                   const model::JobStatus& after);
  // Sets job_labels and ttl_deleted; the gauge to kGone.
  void TtlDeleted(const model::Job& job);
};

class ControllerMetrics {
 public:
  // `metrics` is not owned and may be null; `forget_finished_jobs` as Controller::Options'.
  ControllerMetrics(metrics::OperatorMetrics* metrics, bool forget_finished_jobs);

  // A stored finished job without an entry (forget_finished_jobs), as Start finds it: added to
  // the totals as its status says. Published by the next PublishTotals or RecordPass.
  void CountStored(const model::JobStatus& status);
  // Sets the replicas and jobs gauges to the totals (every phase and state, zeros included).
  void PublishTotals();

  // What a pass over `key` did (with its KeyLock held).
  void RecordPass(const store::JobKey& key, const PassRecord& record);
  // A job JobService deleted, as last stored (with its KeyLock held): taken off the totals here,
  // where the job as last stored is known; the pass that then finds it gone could not say what
  // a finished job without an entry was counted as.
  void JobDeleted(const model::Job& job);

  // A pass's duration (measured on the monotonic clock) and result (coach_reconcile_*).
  void PassTimed(absl::Duration took, bool ok);
  // The work queue's depth and delayed keys (coach_workqueue_*).
  void QueueSize(size_t depth, size_t delayed);
  // coach_backend_up.
  void BackendUp(bool up);

  // False with no OperatorMetrics: nothing is recorded (callers may skip gathering it).
  bool enabled() const { return metrics_ != nullptr; }

  // Jobs with a gauge entry (Controller::Entries).
  size_t entries() const;

 private:
  // Adds (sign 1) or takes (-1) `gauge` to or from the totals.
  void AddToTotals(const JobGauge& gauge, int sign) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishTotalsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The gauge part of RecordPass.
  void RecordGauge(const store::JobKey& key, const PassRecord& record);

  metrics::OperatorMetrics* const metrics_;
  const bool forget_finished_jobs_;

  mutable absl::Mutex mu_;
  // Per job. Kept for every job a pass observed, except a finished one whose stored status
  // says the same (forget_finished_jobs; header comment).
  std::map<store::JobKey, JobGauge> gauges_ ABSL_GUARDED_BY(mu_);
  // Sums of every job's phases and counts of their states: those of the entries above plus,
  // with forget_finished_jobs, StoredGauge of each finished job without one.
  std::array<int64_t, 5> phase_totals_ ABSL_GUARDED_BY(mu_){};
  std::array<int64_t, 6> state_totals_ ABSL_GUARDED_BY(mu_){};
};

}  // namespace coach::core
