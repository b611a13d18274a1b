#include "operator/reconcile/reconciler.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"
#include "common/status_macros.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/desired_objects.h"
#include "operator/reconcile/gang.h"
#include "operator/reconcile/job_recovery.h"
#include "operator/reconcile/mpi_objects.h"
#include "operator/reconcile/pending.h"
#include "operator/reconcile/queue_wait.h"
#include "operator/reconcile/recovery_policy.h"
#include "operator/reconcile/restart_rule.h"
#include "operator/reconcile/success_rule.h"
#include "operator/reconcile/train_job_plan.h"

namespace coach::reconcile {
namespace {

using api::v1::kJobFailedReason;
using api::v1::kJobRunning;
using api::v1::kJobSucceeded;
using api::v1::kJobSuspended;
using api::v1::kReplicaLauncher;
using api::v1::kReplicaWorker;
using model::Action;
using model::KubeObject;
using model::ObservedPod;
using model::PodPhase;

// Upstream's "no exit code seen" marker (0xbeef): >= 128, so retryable under ExitCode.
constexpr int kUnknownExitCode = 0xbeef;

class Pass {
 public:
  Pass(const model::Job& job, const model::ObservedState& observed, absl::Time now,
       const model::ReconcileConfig& config, const api::v1::KindInfo& kind,
       const TrainJobPlan* plan = nullptr)
      : job_(job),
        observed_(observed),
        now_(now),
        config_(config),
        kind_(kind),
        kind_name_(kind.name),
        plan_(plan) {
    result_.status = job.status();
  }

  model::ReconcileResult Run();

 private:
  model::JobStatus& status() { return result_.status; }
  const std::string& name() const { return job_.metadata().name(); }

  void Event(const std::string& type, const std::string& reason, const std::string& message) {
    result_.events.push_back({type, reason, message});
  }
  bool Exists(const std::string& kind, const std::string& obj_name) const {
    for (const auto& o : observed_.objects) {
      if (o.kind == kind && o.name == obj_name) return true;
    }
    return false;
  }
  void Create(KubeObject obj) {
    Event("Normal", "SuccessfulCreate" + obj.kind,
          absl::StrCat("Created ", absl::AsciiStrToLower(obj.kind), ": ", obj.name));
    result_.actions.push_back({Action::Type::kCreate, std::move(obj)});
  }
  // `uid`, when known, limits the delete to the instance this pass observed: a delete that
  // arrives late (a retried request, a pass on an older view) cannot take a newer pod that a
  // restart created under the same name.
  void Delete(const std::string& kind, const std::string& obj_name, const std::string& uid = "") {
    if (!deleted_.insert({kind, obj_name}).second) return;
    KubeObject obj;
    obj.api_version = kind == "PodGroup" ? PodGroupApiVersion() : "v1";
    obj.kind = kind;
    obj.name = obj_name;
    obj.namespace_ = job_.metadata().namespace_();
    if (!uid.empty()) obj.body = {{"metadata", {{"uid", uid}}}};
    Event("Normal", "SuccessfulDelete" + kind,
          absl::StrCat("Deleted ", absl::AsciiStrToLower(kind), ": ", obj_name));
    result_.actions.push_back({Action::Type::kDelete, std::move(obj)});
  }
  std::string PodGroupApiVersion() const {
    return config_.gang_scheduler == model::GangScheduler::kSchedulerPlugins
               ? "scheduling.x-k8s.io/v1alpha1"
               : "scheduling.volcano.sh/v1beta1";
  }
  // A pod that is already going away (deletionTimestamp set, e.g. within its grace period) is
  // not deleted again: a pass that acts is followed by another pass, so a repeated delete would
  // spin, with an API call and an event each time, until the pod is gone.
  void DeletePodAndService(const ObservedPod& pod) {
    if (!pod.deleting) Delete("Pod", pod.name, pod.uid);
    if (Exists("Service", pod.name)) Delete("Service", pod.name);
  }
  void DeletePodGroup() {
    if (Exists("PodGroup", name())) Delete("PodGroup", name());
  }
  std::string CleanPodPolicy() const {
    const auto& rp = job_.spec().run_policy();
    if (rp.has_clean_pod_policy()) return rp.clean_pod_policy();
    if (job_.spec().has_mpi_clean_pod_policy()) return job_.spec().mpi_clean_pod_policy();
    return api::v1::kCleanPodPolicyNone;
  }
  // cleanPodPolicy after the job finished (or failed on a limit).
  void CleanUp() {
    const std::string policy = CleanPodPolicy();
    for (const ObservedPod& pod : observed_.pods) {
      const bool active = pod.phase == PodPhase::kRunning || pod.phase == PodPhase::kPending;
      if (policy == api::v1::kCleanPodPolicyAll ||
          (policy == api::v1::kCleanPodPolicyRunning && active)) {
        DeletePodAndService(pod);
      }
    }
    DeletePodGroup();
  }
  void CountReplicas();
  // A job that succeeded counts its replicas still active as succeeded (upstream's rule), on the
  // pass that finds it succeeded: readers of that status see the final counts.
  void CountSucceededReplicas();
  void Succeed(const std::string& message);
  // `failed_type`: the replica type whose failure failed the job, when one did; a TrainJob
  // says it in upstream's words (FailedJobs naming the first failed Job).
  void Fail(const std::string& reason, const std::string& message,
            const std::string& failed_type = "");
  // The pod of `type`/`index`: the TrainJob plan's, else built from the replica spec.
  absl::StatusOr<KubeObject> PodFor(const std::string& type, int index) const;
  // A TrainJob's replicated job may start: the jobs it depends on reached their state.
  bool DependenciesMet(const std::string& type) const;
  void UpdateJobsStatus();
  void ApplyTtl();
  void ReconcileReplicas(std::map<std::string, bool>& nonretryable);
  void UpdateConditions(const std::map<std::string, bool>& nonretryable);
  void ExplainPending();
  void NoteQueue(bool suspended);
  model::ReconcileResult Done();

  // Whole-job recovery (recovery_policy.h).
  bool JobScope() const { return policy_.scope == RestartScope::kJob; }
  // A pod of an earlier attempt of a job-scoped job: it goes before the next attempt starts,
  // unless its coach-launch carries it into the next attempt (InPlaceMember).
  bool Stale(const ObservedPod& pod) const {
    return JobScope() && pod.attempt < attempt_ && !InPlaceMember(pod);
  }
  // Restarts in place (coach.dev/restart-mode: InPlace): the operator takes reports, so the
  // pods' coach-launch hears of a restart.
  bool InPlace() const {
    return JobScope() && policy_.in_place && !config_.progress_report_address.empty();
  }
  // A pod whose coach-launch restarts its ranks in place: it outlives attempts, running, and
  // also once it ended (succeeded, failed) in the attempt its launcher carried it into.
  bool InPlaceMember(const ObservedPod& pod) const {
    return InPlace() && pod.launch.has_value() && !pod.deleting && !pod.node_lost &&
           pod.disruption.empty() &&
           (pod.phase == PodPhase::kRunning || pod.launch->attempt == attempt_);
  }
  // The pod as the attempt `attempt_` sees it: an in-place member between attempts is
  // Pending, one whose workers failed in this attempt is Failed with their code.
  ObservedPod AsOfAttempt(const ObservedPod& pod) const;
  // Every replica is one in-place member running the current attempt's ranks (or failed in
  // it): a restart can be made in place. Otherwise `why_not` says what stands in the way.
  bool InPlaceReady(std::string& why_not) const;
  // No rank of an earlier attempt runs any more: the ranks of `attempt` may start.
  bool InPlaceReleased(int attempt) const;
  // Ranks that did not all come back in place within the timeout: the pods are recreated.
  bool InPlaceTimedOut();
  // The pods of the attempt running now (every pod outside Job scope), as the recovery rules
  // read them; made once the attempt is known.
  std::vector<ObservedPod> CurrentPods() const;
  void ForceDeleteLostPods();
  bool ReplicaLimitsReached(std::string& message) const;
  bool RecoverJob();
  void RestartJob(bool counted, const std::string& replica_type, const std::string& why);
  void FailRecovery(const std::string& reason, const std::string& message);
  bool AttemptRunning() const {
    return status().has_coach() && status().coach().has_attempt_running_time();
  }
  // Where a stall's no-progress time starts: when the attempt ran, or when the backend began to
  // know reports (an operator that just started has heard none yet), whichever is later.
  absl::Time StallClockStart() const {
    return std::max(FromTimestamp(status().coach().attempt_running_time()),
                    observed_.progress_since);
  }
  const model::JobStatus& status() const { return result_.status; }
  void NoteAttemptRunning();
  bool StalledUnderReplicaScope();
  void RequeueBy(absl::Time at) {
    if (!result_.requeue_at || at < *result_.requeue_at) result_.requeue_at = at;
  }

  const model::Job& job_;
  const model::ObservedState& observed_;
  absl::Time now_;
  const model::ReconcileConfig& config_;
  const api::v1::KindInfo& kind_;
  std::string kind_name_;
  model::ReconcileResult result_;
  std::set<std::pair<std::string, std::string>> deleted_;
  const TrainJobPlan* plan_;
  std::string failed_type_;  // the replica type a permanent failure in job scope came from
  // A TrainJob's failure in upstream's reason (DeadlineExceeded, ReachedMaxRestarts), set by
  // the rule that fails it; empty: FailedJobs.
  std::string upstream_failure_;
  RecoveryPolicy policy_;
  int attempt_ = 0;
  std::vector<ObservedPod> current_;
};

ObservedPod Pass::AsOfAttempt(const ObservedPod& pod) const {
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

bool Pass::InPlaceReady(std::string& why_not) const {
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

bool Pass::InPlaceReleased(int attempt) const {
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

bool Pass::InPlaceTimedOut() {
  if (!InPlace() || AttemptRunning() || !status().coach().has_restart_time()) return false;
  bool waiting = false;
  for (const ObservedPod& pod : observed_.pods) {
    waiting = waiting || (InPlaceMember(pod) && pod.launch->attempt < attempt_);
  }
  if (!waiting) return false;
  const absl::Time at =
      FromTimestamp(status().coach().restart_time()) + config_.in_place_restart_timeout;
  if (now_ < at) {
    RequeueBy(at);
    return false;
  }
  Event("Warning", kind_name_ + "InPlaceRestartTimedOut",
        absl::StrCat(kind_name_, " ", name(), ": the ranks did not all restart in place within ",
                     absl::FormatDuration(config_.in_place_restart_timeout),
                     "; recreating its pods for attempt ", attempt_));
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.deleting) Delete("Pod", pod.name, pod.uid);
  }
  return true;
}

std::vector<ObservedPod> Pass::CurrentPods() const {
  std::vector<ObservedPod> out;
  for (const ObservedPod& pod : observed_.pods) {
    if (Stale(pod)) continue;
    out.push_back(AsOfAttempt(pod));
    // A report from the future (a skewed clock, a heartbeat file's mtime set by the program)
    // counts as now: it must not put the stall clock, or the status, ahead of time.
    if (out.back().progress && out.back().progress->time > now_) out.back().progress->time = now_;
  }
  return out;
}

// A pod that is going away on a node that is gone or NotReady never hears back from its kubelet:
// without a forced delete it stays Terminating, and its replacement (same name) never starts.
void Pass::ForceDeleteLostPods() {
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.deleting || !pod.node_lost) continue;
    const absl::Time at = pod.deletion_requested + config_.lost_node_grace;
    if (now_ < at) {
      RequeueBy(at);
      continue;
    }
    if (!deleted_.insert({"Pod", pod.name}).second) continue;
    KubeObject obj;
    obj.api_version = "v1";
    obj.kind = "Pod";
    obj.name = pod.name;
    obj.namespace_ = job_.metadata().namespace_();
    if (!pod.uid.empty()) obj.body = {{"metadata", {{"uid", pod.uid}}}};
    Event("Warning", "ForceDeletePod",
          absl::StrCat("Force-deleted pod ", pod.name, ": its node is lost and it was still ",
                       "terminating after ", absl::FormatDuration(config_.lost_node_grace)));
    model::Action action{Action::Type::kDelete, std::move(obj)};
    action.force = true;
    result_.actions.push_back(std::move(action));
  }
}

// Replica scope: upstream's backoffLimit (or coach.dev/max-restarts in its place) over every
// replica's restarts, and each type's own budget over that type's.
bool Pass::ReplicaLimitsReached(std::string& message) const {
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
    message = absl::StrCat("Job ", name(),
                           " has failed because it has reached the specified backoff limit");
    return true;
  }
  for (const auto& [type, cap] : policy_.max_restarts_by_type) {
    if (BackoffLimitReached(cap, by_type[type])) {
      message = absl::StrCat("Job ", name(), " has failed because its ", type,
                             " replicas reached their restart budget (",
                             kAnnotationMaxRestartsPrefix, Lower(type), ": ", cap, ")");
      return true;
    }
  }
  return false;
}

void Pass::FailRecovery(const std::string& reason, const std::string& message) {
  result_.requeue_at.reset();
  CleanUp();
  Fail(reason, message, failed_type_);
  ApplyTtl();
}

void Pass::RestartJob(bool counted, const std::string& replica_type, const std::string& why) {
  std::string not_in_place;
  const bool in_place = InPlaceReady(not_in_place);
  api::v1::CoachJobStatus& coach = *status().mutable_coach();
  coach.set_attempt(attempt_ + 1);
  coach.clear_attempt_running_time();
  *coach.mutable_restart_time() = ToTimestamp(now_);
  if (in_place) coach.set_in_place_restarts(coach.in_place_restarts() + 1);
  std::string budget;
  if (counted) {
    coach.set_restarts(coach.restarts() + 1);
    if (!replica_type.empty()) {
      (*coach.mutable_restarts_by_type())[replica_type] += 1;
    }
    budget = policy_.max_restarts
                 ? absl::StrCat("restart ", coach.restarts(), " of ", *policy_.max_restarts)
                 : absl::StrCat("restart ", coach.restarts());
  } else {
    coach.set_disruptions(coach.disruptions() + 1);
    budget = "not counted: a disruption";
  }
  const std::string msg = absl::StrCat(
      kind_name_, " ", name(), " is restarting as a whole job",
      in_place ? ", its ranks in place" : "", " (attempt ", coach.attempt(), ", ", budget,
      ") because ", why, ".", not_in_place.empty() ? "" : " Its pods are recreated: ", not_in_place,
      not_in_place.empty() ? "" : ".");
  MarkRestarting(status(), kind_name_, msg, now_);
  Event(counted ? "Warning" : "Normal", kind_name_ + api::v1::kJobRestartingReason, msg);
  // In place: each pod's coach-launch stops its ranks and starts the next attempt's once every
  // rank of this one is gone (the launch directive). Otherwise every replica of the attempt
  // goes, its Service stays (the next attempt's pods have the same names); nothing of the next
  // attempt starts until they are gone (ReconcileReplicas).
  if (in_place) return;
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.deleting) Delete("Pod", pod.name, pod.uid);
  }
}

// Job scope: a trigger among the current attempt's pods restarts the whole job, or fails it.
// True when the pass is decided (restarted or failed).
bool Pass::RecoverJob() {
  const std::vector<ObservedPod>& current = current_;
  RestartTrigger trigger = FindRestartTrigger(job_, current, AttemptRunning());
  if (trigger.kind == RestartTrigger::Kind::kNone && policy_.progress_deadline &&
      AttemptRunning() && HasTrueCondition(status(), kJobRunning)) {
    const StallCheck stall =
        CheckStall(job_, current, StallClockStart(), *policy_.progress_deadline, now_);
    if (stall.stalled) {
      trigger.kind = RestartTrigger::Kind::kStalled;
      trigger.replica_type = stall.replica_type;
      trigger.why = absl::StrCat("it stalled: ", stall.who, " (", kAnnotationProgressDeadline, ": ",
                                 absl::FormatDuration(*policy_.progress_deadline), ")");
    } else {
      RequeueBy(stall.due);
    }
  }
  switch (trigger.kind) {
    case RestartTrigger::Kind::kNone:
      return false;
    case RestartTrigger::Kind::kPermanent:
      failed_type_ = trigger.failed_type;
      FailRecovery(kJobFailedReason, absl::StrCat(kind_name_, " ", name(), " is failed because ",
                                                  trigger.failed_count, " ", trigger.failed_type,
                                                  " replica(s) failed: ", trigger.why, "."));
      return true;
    case RestartTrigger::Kind::kDisruption:
      RestartJob(false, "", trigger.why);
      return true;
    case RestartTrigger::Kind::kRetryable:
    case RestartTrigger::Kind::kStalled:
      break;
  }
  const bool stalled = trigger.kind == RestartTrigger::Kind::kStalled;
  const api::v1::CoachJobStatus& coach = status().coach();
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
    upstream_failure_ = api::v1::kTrainJobMaxRestartsReason;
    FailRecovery(stalled ? api::v1::kJobStalledReason : kJobFailedReason,
                 absl::StrCat(kind_name_, " ", name(), " has failed because ", trigger.why, " and ",
                              spent, "."));
    return true;
  }
  RestartJob(true, trigger.replica_type, trigger.why);
  return true;
}

void Pass::NoteAttemptRunning() {
  if (!JobScope() && !policy_.progress_deadline) return;
  if (AttemptRunning() || IsFinished(status())) return;
  int running = 0;
  for (const ObservedPod& pod : current_) {
    if (pod.phase == PodPhase::kRunning && !pod.deleting && pod.index >= 0 &&
        pod.index < Replicas(job_, pod.replica_type)) {
      ++running;
    }
  }
  if (running < TotalReplicas(job_)) return;
  api::v1::CoachJobStatus& coach = *status().mutable_coach();
  coach.set_attempt(attempt_);
  *coach.mutable_attempt_running_time() = ToTimestamp(now_);
  // The stall clock starts here; nothing else may wake the job if no replica ever reports.
  if (policy_.progress_deadline) RequeueBy(now_ + *policy_.progress_deadline);
}

// Replica scope: restarting one replica of a hung collective does not help; a stall fails the
// job.
bool Pass::StalledUnderReplicaScope() {
  if (JobScope() || !policy_.progress_deadline || !AttemptRunning() ||
      !HasTrueCondition(status(), kJobRunning) || IsFinished(status())) {
    return false;
  }
  const StallCheck stall =
      CheckStall(job_, current_, StallClockStart(), *policy_.progress_deadline, now_);
  if (!stall.stalled) {
    RequeueBy(stall.due);
    return false;
  }
  FailRecovery(api::v1::kJobStalledReason,
               absl::StrCat(kind_name_, " ", name(), " has failed because it stalled: ", stall.who,
                            " (", kAnnotationProgressDeadline, ": ",
                            absl::FormatDuration(*policy_.progress_deadline), ")."));
  return true;
}

void Pass::CountReplicas() {
  auto& statuses = *status().mutable_replica_statuses();
  std::map<std::string, std::string> old_label_selectors;
  for (const auto& [type, rs] : statuses) old_label_selectors[type] = rs.label_selector_json();
  statuses.clear();
  for (const std::string& type : ReplicaTypes(job_)) {
    api::v1::ReplicaStatus rs;
    rs.set_selector(ReplicaSelector(job_, type));
    rs.set_label_selector_json(old_label_selectors[type]);
    if (plan_ != nullptr) rs.set_replicas(Replicas(job_, type));
    statuses[type] = rs;
  }
  for (const ObservedPod& observed : observed_.pods) {
    auto it = statuses.find(observed.replica_type);
    if (it == statuses.end() || Stale(observed)) continue;
    const ObservedPod pod = AsOfAttempt(observed);
    api::v1::ReplicaStatus& rs = it->second;
    switch (pod.phase) {
      case PodPhase::kRunning:
        // A Running pod that is being deleted is as good as failed (upstream).
        if (pod.deleting) {
          rs.set_failed(rs.failed() + 1);
        } else {
          rs.set_active(rs.active() + 1);
        }
        break;
      case PodPhase::kSucceeded:
        rs.set_succeeded(rs.succeeded() + 1);
        break;
      case PodPhase::kFailed:
        rs.set_failed(rs.failed() + 1);
        break;
      default:
        break;
    }
  }
}

void Pass::CountSucceededReplicas() {
  if (!HasTrueCondition(status(), kJobSucceeded)) return;
  for (auto& [type, rs] : *status().mutable_replica_statuses()) {
    rs.set_succeeded(rs.succeeded() + rs.active());
    rs.set_active(0);
  }
}

void Pass::Succeed(const std::string& message) {
  MarkSucceeded(status(), kind_name_, message, now_);
  Event("Normal", kind_name_ + api::v1::kJobSucceededReason, message);
}

void Pass::Fail(const std::string& reason, const std::string& message,
                const std::string& failed_type) {
  Event("Warning", kind_name_ + reason, message);
  if (job_.kind() != api::v1::TRAIN_JOB) {
    MarkFailed(status(), kind_name_, reason, message, now_);
    return;
  }
  // A TrainJob's reasons are unprefixed, as upstream's are; coach's own (a refused job, a stall)
  // keep coach's words.
  if (reason == api::v1::kJobFailedValidationReason || reason == api::v1::kJobStalledReason) {
    MarkFailed(status(), "", reason, message, now_);
    return;
  }
  // Upstream's words (JobSet v0.12 constants); the event above keeps coach's detail.
  if (upstream_failure_ == api::v1::kTrainJobDeadlineReason) {
    MarkFailed(status(), "", upstream_failure_, api::v1::kTrainJobDeadlineMessage, now_);
  } else if (upstream_failure_ == api::v1::kTrainJobMaxRestartsReason) {
    MarkFailed(status(), "", upstream_failure_,
               "jobset failed due to reaching max number of restarts", now_);
  } else {
    const std::string rjob = !failed_type.empty() ? failed_type
                             : plan_ != nullptr   ? plan_->trainer_job
                                                  : kTrainerReplicatedJob;
    MarkFailed(status(), "", api::v1::kTrainJobFailedJobsReason,
               absl::StrCat("jobset failed due to one or more job failures (first failed job: ",
                            name(), "-", rjob, "-0)"),
               now_);
  }
}

absl::StatusOr<KubeObject> Pass::PodFor(const std::string& type, int index) const {
  if (plan_ == nullptr) return DesiredPod(job_, type, index, config_);
  auto it = plan_->pods.find({type, index});
  if (it == plan_->pods.end()) {
    return absl::NotFoundError(absl::StrCat("no pod ", type, "/", index, " in the TrainJob plan"));
  }
  KubeObject pod = it->second;
  RETURN_IF_ERROR(DecoratePlannedPod(job_, type, index, config_, pod));
  return pod;
}

bool Pass::DependenciesMet(const std::string& type) const {
  if (plan_ == nullptr) return true;
  auto deps = plan_->depends_on.find(type);
  if (deps == plan_->depends_on.end()) return true;
  for (const auto& [rjob, state] : deps->second) {
    if (!JobReached(*plan_, rjob, state, current_)) return false;
  }
  return true;
}

// jobsStatus: one Job per replicated job, so each counter is 0 or 1.
void Pass::UpdateJobsStatus() {
  if (plan_ == nullptr) return;
  const bool suspended = job_.spec().run_policy().suspend();
  const bool failed = HasTrueCondition(status(), api::v1::kJobFailed);
  auto& out = *status().mutable_jobs_status();
  out.Clear();
  for (const std::string& rjob : plan_->jobs) {
    api::v1::ReplicatedJobStatus& js = *out.Add();
    js.set_name(rjob);
    const int replicas = Replicas(job_, rjob);
    int succeeded = 0, running = 0, pending = 0, failed_pods = 0;
    for (const ObservedPod& p : current_) {
      if (p.replica_type != rjob) continue;
      switch (p.phase) {
        case PodPhase::kSucceeded:
          ++succeeded;
          break;
        case PodPhase::kRunning:
          ++running;
          break;
        case PodPhase::kFailed:
          ++failed_pods;
          break;
        default:
          ++pending;
          break;
      }
    }
    if (suspended) {
      js.set_suspended(1);
    } else if (succeeded >= replicas) {
      js.set_succeeded(1);
    } else if (failed && failed_pods > 0) {
      js.set_failed(1);
    } else if (running + pending > 0 || succeeded > 0) {
      js.set_active(1);
    }
    if (!suspended && running + succeeded >= replicas && succeeded < replicas) js.set_ready(1);
  }
}

void Pass::ApplyTtl() {
  const auto& rp = job_.spec().run_policy();
  if (!rp.has_ttl_seconds_after_finished()) return;
  if (!status().has_completion_time()) *status().mutable_completion_time() = ToTimestamp(now_);
  const absl::Time at =
      FromTimestamp(status().completion_time()) + absl::Seconds(rp.ttl_seconds_after_finished());
  if (now_ >= at) {
    KubeObject obj;
    obj.api_version = std::string(kind_.api_version);
    obj.kind = kind_name_;
    obj.name = name();
    obj.namespace_ = job_.metadata().namespace_();
    result_.actions.push_back({Action::Type::kDeleteJob, std::move(obj)});
  } else {
    result_.requeue_at = at;
  }
}

void Pass::ReconcileReplicas(std::map<std::string, bool>& nonretryable) {
  if (job_.kind() == api::v1::MPI_JOB) {
    std::vector<int> running_workers;
    for (const ObservedPod& p : observed_.pods) {
      if (p.replica_type == kReplicaWorker && p.phase == PodPhase::kRunning) {
        running_workers.push_back(p.index);
      }
    }
    auto aux = MpiAuxObjects(job_, config_, running_workers);
    if (aux.ok()) {
      for (KubeObject& o : *aux) {
        if (!Exists(o.kind, o.name)) Create(std::move(o));
      }
    }
  }
  if (plan_ != nullptr) {
    for (const KubeObject& o : plan_->objects) {
      if (!Exists(o.kind, o.name)) Create(o);
    }
  } else if (auto pg = DesiredPodGroup(job_, config_); pg && !Exists("PodGroup", pg->name)) {
    Create(std::move(*pg));
  }
  // The next attempt of a job-scoped job starts once every pod of the last one is gone: a new
  // rank must never meet an old one at the rendezvous.
  bool previous_attempt_left = false;
  for (const ObservedPod& p : observed_.pods) {
    if (InPlaceMember(p) && p.launch->attempt < attempt_ &&
        p.launch->phase == ObservedPod::Launch::Phase::kRunning) {
      previous_attempt_left = true;
    }
    if (!Stale(p)) continue;
    previous_attempt_left = true;
    if (!p.deleting) Delete("Pod", p.name, p.uid);
  }
  for (const std::string& type : ReplicaTypes(job_)) {
    const int replicas = Replicas(job_, type);
    const std::string policy = RestartPolicy(job_, type);
    std::map<int, std::vector<const ObservedPod*>> by_index;
    for (const ObservedPod& p : observed_.pods) {
      if (p.replica_type == type && !Stale(p)) by_index[p.index].push_back(&p);
    }
    int limit = replicas;
    if (!by_index.empty()) limit = std::max(limit, by_index.rbegin()->first + 1);
    for (int index = 0; index < limit; ++index) {
      auto it = by_index.find(index);
      if (it == by_index.end()) {
        if (index >= replicas || previous_attempt_left || !DependenciesMet(type)) continue;
        auto pod = PodFor(type, index);
        if (!pod.ok()) {
          Event("Warning", kind_name_ + "InvalidSpec", std::string(pod.status().message()));
          continue;
        }
        Create(std::move(*pod));
        continue;
      }
      for (const ObservedPod* pod : it->second) {
        if (index >= replicas || index < 0) {
          DeletePodAndService(*pod);
          continue;
        }
        // Job scope: RecoverJob decided what a failed pod means for the whole job.
        if (pod->phase != PodPhase::kFailed || pod->deleting || JobScope()) continue;
        const int exit_code = pod->exit_code.value_or(kUnknownExitCode);
        if (pod->exit_code) {
          Event("Normal", "ExitedWithCode",
                absl::StrCat("Pod: ", job_.metadata().namespace_(), ".", pod->name,
                             " exited with code ", exit_code));
        }
        if (RecreatesFailedPod(policy, exit_code)) {
          // The Service stays: the recreated pod has the same name and labels.
          Delete("Pod", pod->name, pod->uid);
        } else if (IsPermanentFailure(policy, exit_code)) {
          nonretryable[type] = true;
        }
      }
    }
    // MPIJob's replicas and a TrainJob's (one headless Service, a plan object) have no Service
    // each.
    if (job_.kind() == api::v1::MPI_JOB || plan_ != nullptr) continue;
    for (int index = 0; index < replicas; ++index) {
      const std::string svc = ReplicaName(job_, type, index);
      if (Exists("Service", svc)) continue;
      auto obj = DesiredService(job_, type, index);
      if (obj.ok()) Create(std::move(*obj));
    }
    const std::string prefix =
        ReplicaName(job_, type, 0).substr(0, ReplicaName(job_, type, 0).size() - 1);
    for (const auto& o : observed_.objects) {
      int index = 0;
      if (o.kind == "Service" && absl::StartsWith(o.name, prefix) &&
          absl::SimpleAtoi(o.name.substr(prefix.size()), &index) && index >= replicas) {
        Delete("Service", o.name);
      }
    }
  }
}

void Pass::UpdateConditions(const std::map<std::string, bool>& nonretryable) {
  const auto& rs = status().replica_statuses();
  auto get = [&](const std::string& t) {
    auto it = rs.find(t);
    return it == rs.end() ? api::v1::ReplicaStatus() : it->second;
  };
  const std::string full = absl::StrCat(job_.metadata().namespace_(), "/", name());

  bool worker0_succeeded = false;
  for (const ObservedPod& p : observed_.pods) {
    if (p.replica_type == kReplicaWorker && p.index == 0 && p.phase == PodPhase::kSucceeded) {
      worker0_succeeded = true;
    }
  }
  JobProgress progress;
  if (plan_ == nullptr) {
    progress = EvaluateSuccessRule(kind_, job_, rs, worker0_succeeded);
  } else {
    // JobSet's successPolicy over the target replicated jobs; running once any pod runs.
    int reached = 0;
    for (const std::string& rjob : plan_->success_jobs) {
      reached += JobReached(*plan_, rjob, "Complete", current_) ? 1 : 0;
    }
    progress.succeeded =
        plan_->success_any ? reached > 0 : reached == static_cast<int>(plan_->success_jobs.size());
    for (const auto& [type, s] : rs) progress.running = progress.running || s.active() > 0;
  }

  std::string fail_msg;
  std::string fail_type;
  std::string restart_msg;
  for (const std::string& type : ReplicaTypes(job_)) {
    const api::v1::ReplicaStatus s = get(type);
    if (s.failed() == 0 || Replicas(job_, type) <= s.succeeded() + s.active()) continue;
    auto nr = nonretryable.find(type);
    const bool permanent = nr != nonretryable.end() && nr->second;
    if (FailureRestartsJob(kind_, RestartPolicy(job_, type), permanent)) {
      if (restart_msg.empty()) {
        restart_msg = absl::StrCat(kind_name_, " ", name(), " is restarting because ", s.failed(),
                                   " ", type, " replica(s) failed.");
      }
    } else if (fail_msg.empty()) {
      fail_msg = absl::StrCat(kind_name_, " ", name(), " is failed because ", s.failed(), " ", type,
                              " replica(s) failed.");
      fail_type = type;
    }
  }

  if (progress.succeeded) {
    Succeed(absl::StrCat(kind_name_, " ", full, " successfully completed."));
  } else if (!fail_msg.empty()) {
    Fail(kJobFailedReason, fail_msg, fail_type);
  } else if (!restart_msg.empty()) {
    MarkRestarting(status(), kind_name_, restart_msg, now_);
    Event("Warning", kind_name_ + api::v1::kJobRestartingReason, restart_msg);
  } else if (progress.running) {
    MarkRunning(status(), kind_name_, absl::StrCat(kind_name_, " ", full, " is running."), now_);
  }
}

// Kueue: a suspended job whose Workload waits says where and why (Queued, and an event when
// the wait starts); a job that runs again after such a wait was admitted.
void Pass::NoteQueue(bool suspended) {
  const std::string text = UpdateQueued(status(), kind_name_, suspended, observed_.queue, now_);
  if (!text.empty()) Event("Normal", api::v1::kJobWaitingForQuotaReason, text);
}

// Until the job runs, the Created condition's message says why its replicas wait (and the
// default once nothing waits); a message with a text the condition did not have is also a job
// event, so the same facts on every pass, one more replica in a state already reported, or a
// state no replica is in any more, add no event.
void Pass::ExplainPending() {
  api::v1::JobCondition* created = nullptr;
  for (api::v1::JobCondition& c : *status().mutable_conditions()) {
    if (c.type() == api::v1::kJobCreated && c.status() == api::v1::kConditionTrue) created = &c;
  }
  if (created == nullptr) return;
  std::optional<PendingReport> report;
  if (!IsFinished(status()) && !HasTrueCondition(status(), kJobRunning)) {
    report = ReportPending(observed_.pods, config_.karpenter.enabled);
  }
  // Without a report, only a message this rule wrote goes back to the default (a condition
  // updated after its transition): a Created condition as another writer left it stays.
  if (!report && google::protobuf::util::MessageDifferencer::Equals(
                     created->last_update_time(), created->last_transition_time())) {
    return;
  }
  const std::string want =
      report ? report->message : absl::StrCat(kind_name_, " ", name(), " is created.");
  if (created->message() == want) return;
  bool news = false;
  if (report) {
    const std::set<std::string> before = PendingTexts(created->message());
    for (const std::string& text : report->texts) news = news || before.count(text) == 0;
  }
  created->set_message(want);
  *created->mutable_last_update_time() = ToTimestamp(now_);
  if (news) Event(report->type, report->reason, report->message);
}

model::ReconcileResult Pass::Done() {
  UpdateJobsStatus();
  if (InPlace()) {
    const int attempt = status().coach().attempt();
    result_.launch =
        model::LaunchDirective{attempt, InPlaceReleased(attempt), IsFinished(status())};
  }
  model::JobStatus before = job_.status();
  model::JobStatus after = status();
  before.clear_last_reconcile_time();
  after.clear_last_reconcile_time();
  result_.status_changed = !google::protobuf::util::MessageDifferencer::Equals(before, after);
  if (result_.status_changed) *status().mutable_last_reconcile_time() = ToTimestamp(now_);
  return std::move(result_);
}

model::ReconcileResult Pass::Run() {
  // Before any early return: the launchers of a job that restarts in place hear that it is
  // over (Done's directive) on every pass of the finished job, not only on the pass that
  // finished it.
  absl::StatusOr<RecoveryPolicy> policy = ParseRecoveryPolicy(job_, config_);
  if (policy.ok()) policy_ = *policy;
  if (!HasTrueCondition(status(), api::v1::kJobCreated)) {
    MarkCreated(status(), kind_name_, absl::StrCat(kind_name_, " ", name(), " is created."), now_);
  }

  if (IsFinished(status())) {
    CleanUp();
    CountSucceededReplicas();
    ApplyTtl();
    return Done();
  }

  // Never a silent stall: a job that cannot run as written fails, saying why.
  if (!observed_.refused.empty()) {
    CleanUp();
    Fail(api::v1::kJobFailedValidationReason, observed_.refused);
    ApplyTtl();
    return Done();
  }

  if (!policy.ok()) {
    CleanUp();
    Fail(api::v1::kJobFailedValidationReason, std::string(policy.status().message()));
    ApplyTtl();
    return Done();
  }
  if (JobScope()) {
    attempt_ = status().coach().attempt();
    // A status write lost after a restart's deletes: the pods know the attempt.
    for (const ObservedPod& pod : observed_.pods) attempt_ = std::max(attempt_, pod.attempt);
    if (attempt_ != status().coach().attempt()) status().mutable_coach()->set_attempt(attempt_);
  }
  current_ = CurrentPods();

  const auto& rp = job_.spec().run_policy();
  if (rp.has_suspend() && rp.suspend()) {
    // The stall clock of a resumed job starts when its replicas run again.
    if (status().has_coach()) status().mutable_coach()->clear_attempt_running_time();
    for (const ObservedPod& pod : observed_.pods) DeletePodAndService(pod);
    for (const auto& o : observed_.objects) {
      if (o.kind == "Service") Delete("Service", o.name);
    }
    DeletePodGroup();
    for (auto& [type, rs] : *status().mutable_replica_statuses()) rs.set_active(0);
    const std::string msg = absl::StrCat(kind_name_, " ", name(), " is suspended.");
    // Once per suspension, where upstream v1.9's ReconcileJobs records it on every pass of a
    // suspended job (pkg/controller.v1/common/job.go). Those repeats say nothing new (a pass
    // is a pod or service going away, or a resync): on kube the event recorder folds them
    // into one Event's count anyway, and the job stores keep only a job's newest events, so
    // repeats would push out the ones that explain its history. A job suspended again after
    // a resume is reported again.
    if (MarkSuspended(status(), kind_name_, msg, now_)) {
      Event("Normal", kind_name_ + api::v1::kJobSuspendedReason, msg);
    }
    NoteQueue(true);
    return Done();
  }
  NoteQueue(false);
  if (HasTrueCondition(status(), kJobSuspended)) {
    const std::string msg = absl::StrCat(kind_name_, " ", name(), " is resumed.");
    MarkResumed(status(), kind_name_, msg, now_);
    Event("Normal", kind_name_ + api::v1::kJobResumedReason, msg);
  }

  CountReplicas();
  if (!status().has_start_time()) *status().mutable_start_time() = ToTimestamp(now_);

  // Limits first: a job past them is failed whatever its pods say. A job-scoped job's budget
  // counts whole-job restarts (RecoverJob), not its pods' restarts.
  std::string limit_msg;
  if (!JobScope()) ReplicaLimitsReached(limit_msg);
  if (limit_msg.empty() && rp.has_active_deadline_seconds()) {
    const absl::Time deadline =
        FromTimestamp(status().start_time()) + absl::Seconds(rp.active_deadline_seconds());
    if (now_ >= deadline) {
      upstream_failure_ = api::v1::kTrainJobDeadlineReason;
      limit_msg = absl::StrCat("Job ", name(),
                               " has failed because it was active longer than specified deadline");
    } else {
      result_.requeue_at = deadline;
    }
  }
  if (!limit_msg.empty()) {
    result_.requeue_at.reset();
    CleanUp();
    Fail(kJobFailedReason, limit_msg);
    ApplyTtl();
    return Done();
  }

  ForceDeleteLostPods();
  if (InPlaceTimedOut()) {
    UpdateProgressStatus(current_, config_.progress_status_interval, false, status());
    return Done();
  }
  if (JobScope() && RecoverJob()) {
    UpdateProgressStatus(current_, config_.progress_status_interval, true, status());
    return Done();
  }
  std::map<std::string, bool> nonretryable;
  ReconcileReplicas(nonretryable);
  UpdateConditions(nonretryable);
  ExplainPending();
  NoteAttemptRunning();
  if (StalledUnderReplicaScope()) return Done();
  const std::vector<ObservedPod>& current = current_;
  if (std::optional<absl::Time> at = UpdateProgressStatus(current, config_.progress_status_interval,
                                                          IsFinished(status()), status())) {
    if (!IsFinished(status())) RequeueBy(*at);
  }
  // A backend need not wake a job for each report: a job whose replicas report looks again
  // after the interval, so its status follows their progress.
  if (!IsFinished(status()) &&
      std::any_of(current.begin(), current.end(), [](const ObservedPod& p) {
        return p.progress.has_value() && p.phase == PodPhase::kRunning;
      })) {
    RequeueBy(now_ + config_.progress_status_interval);
  }
  if (IsFinished(status())) {
    // Nothing new starts for a finished job; what ran is cleaned up per policy.
    result_.actions.erase(
        std::remove_if(result_.actions.begin(), result_.actions.end(),
                       [](const Action& a) { return a.type == Action::Type::kCreate; }),
        result_.actions.end());
    result_.events.erase(std::remove_if(result_.events.begin(), result_.events.end(),
                                        [](const model::JobEventRecord& e) {
                                          return absl::StartsWith(e.reason, "SuccessfulCreate");
                                        }),
                         result_.events.end());
    result_.requeue_at.reset();
    CleanUp();
    CountSucceededReplicas();
    ApplyTtl();
  }
  return Done();
}

// A TrainJob runs as the job its plan expands it to. A finished one needs no plan (nothing is
// created for it any more), so a runtime deleted since does not matter to it.
model::ReconcileResult ReconcileTrainJob(const model::Job& job,
                                         const model::ObservedState& observed, absl::Time now,
                                         const model::ReconcileConfig& config,
                                         const api::v1::KindInfo& kind) {
  int attempt = job.status().coach().attempt();
  for (const ObservedPod& pod : observed.pods) attempt = std::max(attempt, pod.attempt);
  absl::StatusOr<TrainJobPlan> plan = PlanTrainJob(job, observed, attempt, config);
  // Admission once, on the pass that first sees the job with its runtime (before it is created).
  if (plan.ok() && !HasTrueCondition(job.status(), api::v1::kJobCreated)) {
    if (absl::Status admitted = AdmitTrainJob(job, observed); !admitted.ok()) {
      plan = admitted;
    }
  }
  if (absl::IsFailedPrecondition(plan.status())) {
    // Upstream: an event and a retry, no condition (the runtime may yet be created).
    model::ReconcileResult waiting;
    waiting.status = job.status();
    waiting.events.push_back(
        {"Warning", "TrainJobResourcesCreationFailed",
         absl::StrCat("TrainJob resources reconciliation failed: ", plan.status().message())});
    waiting.requeue_at = now + absl::Seconds(10);
    return waiting;
  }
  if (!plan.ok()) {
    model::ObservedState refused = observed;
    refused.refused = std::string(plan.status().message());
    return Pass(job, refused, now, config, kind).Run();
  }
  return Pass(plan->job, observed, now, config, kind, &*plan).Run();
}

}  // namespace

model::ReconcileResult Reconcile(const model::Job& job, const model::ObservedState& observed,
                                 absl::Time now, const model::ReconcileConfig& config) {
  const auto& rp = job.spec().run_policy();
  const std::string controller =
      job.kind() == api::v1::TRAIN_JOB ? api::v1::kTrainJobController : config.controller_name;
  if (rp.has_managed_by() && !rp.managed_by().empty() && rp.managed_by() != controller) {
    model::ReconcileResult untouched;
    untouched.status = job.status();
    return untouched;
  }
  auto kind = KindOf(job);
  if (!kind.ok()) {
    model::ReconcileResult bad;
    bad.status = job.status();
    bad.events.push_back({"Warning", "InvalidSpec", std::string(kind.status().message())});
    return bad;
  }
  if (job.kind() == api::v1::TRAIN_JOB && !IsFinished(job.status())) {
    return ReconcileTrainJob(job, observed, now, config, **kind);
  }
  return Pass(job, observed, now, config, **kind).Run();
}

}  // namespace coach::reconcile
