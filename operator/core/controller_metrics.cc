#include "operator/core/controller_metrics.h"

#include "api/v1/job_conditions.h"
#include "operator/core/job_service.h"
#include "operator/reconcile/conditions.h"

namespace coach::core {
namespace {

const char* ActionName(model::Action::Type type) {
  switch (type) {
    case model::Action::Type::kCreate:
      return "create";
    case model::Action::Type::kDelete:
      return "delete";
    case model::Action::Type::kDeleteJob:
      return "delete_job";
  }
  return "unknown";
}

// The gauge's states, in the order JobGauge::state indexes them.
constexpr std::array<const char*, 6> kStates = {api::v1::kJobCreated,    api::v1::kJobRunning,
                                                api::v1::kJobRestarting, api::v1::kJobSuspended,
                                                api::v1::kJobSucceeded,  api::v1::kJobFailed};
constexpr std::array<model::PodPhase, 5> kPhases = {
    model::PodPhase::kPending, model::PodPhase::kRunning, model::PodPhase::kSucceeded,
    model::PodPhase::kFailed, model::PodPhase::kUnknown};

uint8_t StateIndex(const std::string& state) {
  for (size_t i = 0; i < kStates.size(); ++i) {
    if (state == kStates[i]) return static_cast<uint8_t>(i);
  }
  return 0;  // JobState returns one of kStates
}

constexpr size_t PhaseIndex(model::PodPhase phase) { return static_cast<size_t>(phase); }

}  // namespace

std::string JobState(const model::JobStatus& status) {
  for (const char* state : {api::v1::kJobSucceeded, api::v1::kJobFailed, api::v1::kJobSuspended,
                            api::v1::kJobRestarting, api::v1::kJobRunning}) {
    if (reconcile::HasTrueCondition(status, state)) return state;
  }
  return api::v1::kJobCreated;
}

JobGauge ObservedGauge(const model::ObservedState& observed, const model::JobStatus& status) {
  JobGauge gauge;
  for (const model::ObservedPod& pod : observed.pods) ++gauge.phases[PhaseIndex(pod.phase)];
  gauge.state = StateIndex(JobState(status));
  return gauge;
}

JobGauge StoredGauge(const model::JobStatus& status) {
  JobGauge gauge;
  for (const auto& [type, replicas] : status.replica_statuses()) {
    gauge.phases[PhaseIndex(model::PodPhase::kRunning)] += replicas.active();
    gauge.phases[PhaseIndex(model::PodPhase::kSucceeded)] += replicas.succeeded();
    gauge.phases[PhaseIndex(model::PodPhase::kFailed)] += replicas.failed();
  }
  gauge.state = StateIndex(JobState(status));
  return gauge;
}

void PassRecord::Observed(const model::ObservedState& state, const model::JobStatus& after) {
  gauge = Gauge::kObserved;
  observed = ObservedGauge(state, after);
  finished_as = reconcile::IsFinished(after) ? std::optional(StoredGauge(after)) : std::nullopt;
}

void PassRecord::Transitions(const model::Job& job, const model::JobStatus& before,
                             const model::JobStatus& after) {
  job_labels = {job.metadata().namespace_(), FrameworkOf(job)};
  auto turned_true = [&](const char* type) {
    return !reconcile::HasTrueCondition(before, type) && reconcile::HasTrueCondition(after, type);
  };
  succeeded = turned_true(api::v1::kJobSucceeded);
  failed = turned_true(api::v1::kJobFailed);
  restarted = turned_true(api::v1::kJobRestarting);
}

void PassRecord::TtlDeleted(const model::Job& job) {
  job_labels = {job.metadata().namespace_(), FrameworkOf(job)};
  ttl_deleted = true;
  gauge = Gauge::kGone;
}

ControllerMetrics::ControllerMetrics(metrics::OperatorMetrics* metrics, bool forget_finished_jobs)
    : metrics_(metrics), forget_finished_jobs_(forget_finished_jobs) {}

void ControllerMetrics::CountStored(const model::JobStatus& status) {
  if (metrics_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  AddToTotals(StoredGauge(status), 1);
}

void ControllerMetrics::PublishTotals() {
  if (metrics_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  PublishTotalsLocked();
}

void ControllerMetrics::RecordPass(const store::JobKey& key, const PassRecord& record) {
  if (metrics_ == nullptr) return;
  for (const auto& [type, ok] : record.actions) {
    metrics_->actions_total->Add({ActionName(type), ok ? "ok" : "error"});
  }
  if (record.succeeded) metrics_->jobs_successful->Add(record.job_labels);
  if (record.failed) metrics_->jobs_failed->Add(record.job_labels);
  if (record.restarted) metrics_->jobs_restarted->Add(record.job_labels);
  if (record.ttl_deleted) metrics_->jobs_ttl_deleted->Add(record.job_labels);
  RecordGauge(key, record);
}

void ControllerMetrics::RecordGauge(const store::JobKey& key, const PassRecord& record) {
  if (record.gauge == PassRecord::Gauge::kUnchanged) return;
  absl::MutexLock lock(&mu_);
  // The old counts: the job's entry, or for a finished job without one, what its status as the
  // pass read it says (forget_finished_jobs; header comment).
  auto it = gauges_.find(key);
  if (it != gauges_.end()) {
    AddToTotals(it->second, -1);
  } else if (record.gauge == PassRecord::Gauge::kObserved && record.counted_as.has_value()) {
    AddToTotals(*record.counted_as, -1);
  }
  if (record.gauge == PassRecord::Gauge::kGone) {
    if (it != gauges_.end()) gauges_.erase(it);
  } else {
    const JobGauge& gauge = record.observed;
    AddToTotals(gauge, 1);
    if (forget_finished_jobs_ && record.finished_as.has_value() && gauge == *record.finished_as) {
      // From now on counted as its stored status says: no entry.
      if (it != gauges_.end()) gauges_.erase(it);
    } else if (it != gauges_.end()) {
      it->second = gauge;
    } else {
      gauges_.emplace(key, gauge);
    }
  }
  PublishTotalsLocked();
}

void ControllerMetrics::JobDeleted(const model::Job& job) {
  if (metrics_ == nullptr) return;
  const store::JobKey key = store::KeyOf(job);
  absl::MutexLock lock(&mu_);
  auto it = gauges_.find(key);
  if (it != gauges_.end()) {
    AddToTotals(it->second, -1);
    gauges_.erase(it);
  } else if (forget_finished_jobs_ && reconcile::IsFinished(job.status())) {
    AddToTotals(StoredGauge(job.status()), -1);
  } else {
    return;
  }
  PublishTotalsLocked();
}

void ControllerMetrics::PassTimed(absl::Duration took, bool ok) {
  if (metrics_ == nullptr) return;
  metrics_->reconcile_duration->Observe({}, absl::ToDoubleSeconds(took));
  metrics_->reconcile_total->Add({ok ? "ok" : "error"});
}

void ControllerMetrics::QueueSize(size_t depth, size_t delayed) {
  if (metrics_ == nullptr) return;
  metrics_->workqueue_depth->Set({}, static_cast<double>(depth));
  metrics_->workqueue_delayed->Set({}, static_cast<double>(delayed));
}

void ControllerMetrics::BackendUp(bool up) {
  if (metrics_ == nullptr) return;
  metrics_->backend_up->Set({}, up ? 1 : 0);
}

size_t ControllerMetrics::entries() const {
  absl::MutexLock lock(&mu_);
  return gauges_.size();
}

void ControllerMetrics::AddToTotals(const JobGauge& gauge, int sign) {
  for (size_t p = 0; p < gauge.phases.size(); ++p) phase_totals_[p] += sign * gauge.phases[p];
  state_totals_[gauge.state] += sign;
}

void ControllerMetrics::PublishTotalsLocked() {
  for (model::PodPhase phase : kPhases) {
    metrics_->replicas->Set({model::PodPhaseName(phase)},
                            static_cast<double>(phase_totals_[PhaseIndex(phase)]));
  }
  for (size_t s = 0; s < kStates.size(); ++s) {
    metrics_->jobs->Set({kStates[s]}, static_cast<double>(state_totals_[s]));
  }
}

}  // namespace coach::core
