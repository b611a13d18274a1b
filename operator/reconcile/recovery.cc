#include "operator/reconcile/recovery.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/job_recovery.h"
#include "operator/reconcile/restart_rule.h"

namespace coach::reconcile {

using model::ObservedPod;
using model::PodPhase;

void RequeueBy(std::optional<absl::Time>& requeue, absl::Time at) {
  if (!requeue || at < *requeue) requeue = at;
}

Recovery::Recovery(const model::Job& job, const RecoveryPolicy& policy,
                   const model::ObservedState& observed, const model::JobStatus& status,
                   absl::Time now, const model::ReconcileConfig& config)
    : job_(job), policy_(policy), observed_(observed), status_(status), now_(now), config_(config) {
  absl::StatusOr<const api::v1::KindInfo*> kind = KindOf(job);
  if (kind.ok()) kind_name_ = std::string((*kind)->name);
}

void Recovery::FindAttempt() {
  if (JobScope()) {
    attempt_ = status_.coach().attempt();
    for (const ObservedPod& pod : observed_.pods) attempt_ = std::max(attempt_, pod.attempt);
  }
  current_.clear();
  for (const ObservedPod& pod : observed_.pods) {
    if (Stale(pod)) continue;
    current_.push_back(AsOfAttempt(pod));
    // A report from the future (a skewed clock, a heartbeat file's mtime set by the program)
    // counts as now: it must not put the stall clock, or the status, ahead of time.
    if (current_.back().progress && current_.back().progress->time > now_) {
      current_.back().progress->time = now_;
    }
  }
}

bool Recovery::InPlace() const {
  return JobScope() && policy_.in_place && !config_.progress_report_address.empty();
}

bool Recovery::Stale(const ObservedPod& pod) const {
  return JobScope() && pod.attempt < attempt_ && !InPlaceMember(pod);
}

bool Recovery::InPlaceMember(const ObservedPod& pod) const {
  return InPlace() && pod.launch.has_value() && !pod.deleting && !pod.node_lost &&
         pod.disruption.empty() &&
         (pod.phase == PodPhase::kRunning || pod.launch->attempt == attempt_);
}

ObservedPod Recovery::AsOfAttempt(const ObservedPod& pod) const {
  ObservedPod view = pod;
  if (!InPlaceMember(pod) || pod.phase != PodPhase::kRunning) return view;
  const ObservedPod::Launch& launch = *pod.launch;
  if (launch.attempt != attempt_) {
    view.phase = PodPhase::kPending;
  } else if (launch.phase == ObservedPod::Launch::Phase::kFailed) {
    view.phase = PodPhase::kFailed;
    view.exit_code = launch.exit_code;
  } else if (launch.phase == ObservedPod::Launch::Phase::kStopped) {
    view.phase = PodPhase::kPending;
  }
  return view;
}

bool Recovery::InPlaceReady(std::string& why_not) const {
  if (!InPlace()) return false;
  std::map<std::pair<std::string, int>, int> seen;
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.launch.has_value()) {
      why_not = absl::StrCat("pod ", pod.name, "'s coach-launch has not reported");
    } else if (pod.phase != PodPhase::kRunning || pod.deleting) {
      // A pod that ended (its container, not only its ranks) or goes: its replacement is new.
      why_not = absl::StrCat("pod ", pod.name, " is not running");
    } else if (!InPlaceMember(pod)) {
      why_not = absl::StrCat("pod ", pod.name, " was disrupted");
    } else if (pod.launch->attempt != attempt_) {
      why_not =
          absl::StrCat("pod ", pod.name, "'s coach-launch runs attempt ", pod.launch->attempt);
    } else {
      ++seen[{pod.replica_type, pod.index}];
      continue;
    }
    return false;
  }
  for (const std::string& type : ReplicaTypes(job_)) {
    for (int index = 0; index < Replicas(job_, type); ++index) {
      auto it = seen.find({type, index});
      if (it == seen.end() || it->second != 1) {
        why_not = absl::StrCat(type, " replica ", index, " has ", it == seen.end() ? 0 : it->second,
                               " pods");
        return false;
      }
    }
  }
  return true;
}

bool Recovery::InPlaceReleased(int attempt) const {
  for (const ObservedPod& pod : observed_.pods) {
    if (InPlaceMember(pod)) {
      if (pod.launch->attempt < attempt &&
          pod.launch->phase == ObservedPod::Launch::Phase::kRunning) {
        return false;
      }
    } else if (pod.attempt < attempt) {
      return false;  // a pod of an earlier attempt, not (or no longer) in place, still there
    }
  }
  return true;
}

bool Recovery::PreviousAttemptLeft() const {
  for (const ObservedPod& p : observed_.pods) {
    if (InPlaceMember(p) && p.launch->attempt < attempt_ &&
        p.launch->phase == ObservedPod::Launch::Phase::kRunning) {
      return true;
    }
    if (Stale(p)) return true;
  }
  return false;
}

bool Recovery::AttemptRunning() const {
  return status_.has_coach() && status_.coach().has_attempt_running_time();
}

absl::Time Recovery::StallClockStart() const {
  return std::max(FromTimestamp(status_.coach().attempt_running_time()), observed_.progress_since);
}

std::vector<const ObservedPod*> Recovery::LostPodsToForceDelete(
    std::optional<absl::Time>& requeue) const {
  std::vector<const ObservedPod*> out;
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.deleting || !pod.node_lost) continue;
    const absl::Time at = pod.deletion_requested + config_.lost_node_grace;
    if (now_ < at) {
      RequeueBy(requeue, at);
      continue;
    }
    out.push_back(&pod);
  }
  return out;
}

bool Recovery::InPlaceTimedOut(std::optional<absl::Time>& requeue) const {
  if (!InPlace() || AttemptRunning() || !status_.coach().has_restart_time()) return false;
  bool waiting = false;
  for (const ObservedPod& pod : observed_.pods) {
    waiting = waiting || (InPlaceMember(pod) && pod.launch->attempt < attempt_);
  }
  if (!waiting) return false;
  const absl::Time at =
      FromTimestamp(status_.coach().restart_time()) + config_.in_place_restart_timeout;
  if (now_ < at) {
    RequeueBy(requeue, at);
    return false;
  }
  return true;
}

std::string Recovery::ReplicaBudgetSpent() const {
  const std::string& name = job_.metadata().name();
  int restarts = 0;
  std::map<std::string, int> by_type;
  for (const ObservedPod& pod : observed_.pods) {
    // Upstream counts Running pods only: a kubelet restarts OnFailure containers in
    // place, so a crash-looping pod stays Running. A backend that restarts by delete +
    // create (local) shows the restarted pod Pending or, when it crashes at once, Failed,
    // and the limit would be seen only by chance (a job crashing at once never failed).
    // Every pod that has not succeeded counts.
    if (pod.phase == PodPhase::kSucceeded) continue;
    if (CountsTowardBackoffLimit(RestartPolicy(job_, pod.replica_type))) {
      restarts += pod.restart_count;
      by_type[pod.replica_type] += pod.restart_count;
    }
  }
  if (policy_.max_restarts && BackoffLimitReached(*policy_.max_restarts, restarts)) {
    return absl::StrCat("Job ", name,
                        " has failed because it has reached the specified backoff limit");
  }
  for (const auto& [type, cap] : policy_.max_restarts_by_type) {
    if (BackoffLimitReached(cap, by_type[type])) {
      return absl::StrCat("Job ", name, " has failed because its ", type,
                          " replicas reached their restart budget (", kAnnotationMaxRestartsPrefix,
                          Lower(type), ": ", cap, ")");
    }
  }
  return "";
}

RecoveryDecision Recovery::DecideJobScope(bool running, std::optional<absl::Time>& requeue) const {
  const std::string& name = job_.metadata().name();
  const std::string& kind_name = kind_name_;
  RecoveryDecision decision;
  RestartTrigger trigger = FindRestartTrigger(job_, current_, AttemptRunning());
  if (trigger.kind == RestartTrigger::Kind::kNone && policy_.progress_deadline &&
      AttemptRunning() && running) {
    const StallCheck stall =
        CheckStall(job_, current_, StallClockStart(), *policy_.progress_deadline, now_);
    if (stall.stalled) {
      trigger.kind = RestartTrigger::Kind::kStalled;
      trigger.replica_type = stall.replica_type;
      trigger.why = absl::StrCat("it stalled: ", stall.who, " (", kAnnotationProgressDeadline, ": ",
                                 absl::FormatDuration(*policy_.progress_deadline), ")");
    } else {
      RequeueBy(requeue, stall.due);
    }
  }
  decision.end.pod = trigger.pod;
  decision.end.replica =
      trigger.deleted_pod.empty() ? std::string() : LogReplicaName(job_, trigger.deleted_pod);
  decision.end.reason = trigger.kind == RestartTrigger::Kind::kStalled ? "Stalled"
                        : trigger.pod != nullptr                       ? PodEndReason(*trigger.pod)
                                                                       : "Deleted";
  switch (trigger.kind) {
    case RestartTrigger::Kind::kNone:
      return decision;
    case RestartTrigger::Kind::kPermanent:
      decision.kind = RecoveryDecision::Kind::kFail;
      decision.reason = api::v1::kJobFailedReason;
      decision.failed_type = trigger.failed_type;
      decision.message =
          absl::StrCat(kind_name, " ", name, " is failed because ", trigger.failed_count, " ",
                       trigger.failed_type, " replica(s) failed: ", trigger.why, ".");
      return decision;
    case RestartTrigger::Kind::kDisruption:
      decision.kind = RecoveryDecision::Kind::kRestart;
      decision.why = trigger.why;
      return decision;
    case RestartTrigger::Kind::kRetryable:
    case RestartTrigger::Kind::kStalled:
      break;
  }
  const bool stalled = trigger.kind == RestartTrigger::Kind::kStalled;
  const api::v1::CoachJobStatus& coach = status_.coach();
  std::string spent;
  if (policy_.max_restarts && coach.restarts() >= *policy_.max_restarts) {
    spent = absl::StrCat("its restart budget (", *policy_.max_restarts, ") is spent");
  } else if (auto cap = policy_.max_restarts_by_type.find(trigger.replica_type);
             cap != policy_.max_restarts_by_type.end()) {
    auto used = coach.restarts_by_type().find(trigger.replica_type);
    if (used != coach.restarts_by_type().end() && used->second >= cap->second) {
      spent = absl::StrCat("its ", trigger.replica_type, " restart budget (", cap->second,
                           ") is spent");
    } else if (cap->second == 0) {
      spent = absl::StrCat("its ", trigger.replica_type, " restart budget (0) is spent");
    }
  }
  if (!spent.empty()) {
    decision.kind = RecoveryDecision::Kind::kFail;
    decision.upstream_reason = api::v1::kTrainJobMaxRestartsReason;
    decision.reason = stalled ? api::v1::kJobStalledReason : api::v1::kJobFailedReason;
    decision.message = absl::StrCat(kind_name, " ", name, " has failed because ", trigger.why,
                                    " and ", spent, ".");
    return decision;
  }
  decision.kind = RecoveryDecision::Kind::kRestart;
  decision.counted = true;
  decision.replica_type = trigger.replica_type;
  decision.why = trigger.why;
  return decision;
}

RecoveryDecision Recovery::DecideReplicaScopeStall(bool running,
                                                   std::optional<absl::Time>& requeue) const {
  RecoveryDecision decision;
  if (JobScope() || !policy_.progress_deadline || !AttemptRunning() || !running ||
      IsFinished(status_)) {
    return decision;
  }
  const StallCheck stall =
      CheckStall(job_, current_, StallClockStart(), *policy_.progress_deadline, now_);
  if (!stall.stalled) {
    RequeueBy(requeue, stall.due);
    return decision;
  }
  const std::string& kind_name = kind_name_;
  decision.kind = RecoveryDecision::Kind::kFail;
  decision.reason = api::v1::kJobStalledReason;
  decision.end.reason = "Stalled";
  decision.message = absl::StrCat(
      kind_name, " ", job_.metadata().name(), " has failed because it stalled: ", stall.who, " (",
      kAnnotationProgressDeadline, ": ", absl::FormatDuration(*policy_.progress_deadline), ").");
  return decision;
}

bool Recovery::AttemptStartsRunning(std::optional<absl::Time>& requeue) const {
  if (!JobScope() && !policy_.progress_deadline) return false;
  if (AttemptRunning() || IsFinished(status_)) return false;
  int running = 0;
  for (const ObservedPod& pod : current_) {
    if (pod.phase == PodPhase::kRunning && !pod.deleting && pod.index >= 0 &&
        pod.index < Replicas(job_, pod.replica_type)) {
      ++running;
    }
  }
  if (running < TotalReplicas(job_)) return false;
  // The stall clock starts here; nothing else may wake the job if no replica ever reports.
  if (policy_.progress_deadline) RequeueBy(requeue, now_ + *policy_.progress_deadline);
  return true;
}

std::string RecordRestart(const RecoveryDecision& restart, int attempt, bool in_place,
                          const std::string& not_in_place, const RecoveryPolicy& policy,
                          const std::string& kind_name, const std::string& job_name, absl::Time now,
                          model::JobStatus& status) {
  api::v1::CoachJobStatus& coach = *status.mutable_coach();
  coach.set_attempt(attempt + 1);
  coach.clear_attempt_running_time();
  *coach.mutable_restart_time() = ToTimestamp(now);
  if (in_place) coach.set_in_place_restarts(coach.in_place_restarts() + 1);
  std::string budget;
  if (restart.counted) {
    coach.set_restarts(coach.restarts() + 1);
    if (!restart.replica_type.empty()) {
      (*coach.mutable_restarts_by_type())[restart.replica_type] += 1;
    }
    budget = policy.max_restarts
                 ? absl::StrCat("restart ", coach.restarts(), " of ", *policy.max_restarts)
                 : absl::StrCat("restart ", coach.restarts());
  } else {
    coach.set_disruptions(coach.disruptions() + 1);
    budget = "not counted: a disruption";
  }
  return absl::StrCat(kind_name, " ", job_name, " is restarting as a whole job",
                      in_place ? ", its ranks in place" : "", " (attempt ", coach.attempt(), ", ",
                      budget, ") because ", restart.why, ".",
                      not_in_place.empty() ? "" : " Its pods are recreated: ", not_in_place,
                      not_in_place.empty() ? "" : ".");
}

}  // namespace coach::reconcile
