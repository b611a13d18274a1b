// Applying recovery's decisions (recovery.h, notice.h, elastic.h) within one pass.

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/elastic.h"
#include "operator/reconcile/karpenter_placement.h"
#include "operator/reconcile/notice.h"
#include "operator/reconcile/pass.h"

namespace coach::reconcile::pass_internal {

// A pod that is going away on a node that is gone or NotReady never hears back from its kubelet:
// without a forced delete it stays Terminating, and its replacement (same name) never starts.
void Pass::ForceDeleteLostPods() {
  for (const ObservedPod* pod : recovery_.LostPodsToForceDelete(result_.requeue_at)) {
    Delete("Pod", pod->name, pod->uid, /*force=*/true);
  }
}

bool Pass::InPlaceTimedOut() {
  if (!recovery_.InPlaceTimedOut(result_.requeue_at)) return false;
  Event("Warning", kind_name_ + "InPlaceRestartTimedOut",
        absl::StrCat(kind_name_, " ", name(), ": the ranks did not all restart in place within ",
                     absl::FormatDuration(config_.in_place_restart_timeout),
                     "; recreating its pods for attempt ", recovery_.attempt()));
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.deleting) Delete("Pod", pod.name, pod.uid);
  }
  return true;
}

void Pass::FailRecovery(const RecoveryDecision& failure) {
  upstream_failure_ = failure.upstream_reason;
  result_.requeue_at.reset();
  CleanUp();
  Fail(failure.reason, failure.message, failure.failed_type, failure.end);
  ApplyTtl();
}

// The event of the restart with which a job's pods move to on-demand capacity.
constexpr char kOnDemandCapacityReason[] = "OnDemandCapacity";

void Pass::RestartJob(const RecoveryDecision& restart) {
  std::string not_in_place;
  const bool in_place = recovery_.InPlaceReady(not_in_place);
  const absl::Time start = AttemptStart();
  const int interruptions = status().coach().disruptions();
  std::string msg = RecordRestart(restart, recovery_.attempt(), in_place, not_in_place,
                                  recovery_.policy(), kind_name_, name(), now_, status());
  if (const std::string on_demand =
          OnDemandFromNow(job_, interruptions, status().coach().disruptions());
      !on_demand.empty()) {
    absl::StrAppend(&msg, "; ", on_demand);
    Event("Normal", kOnDemandCapacityReason,
          absl::StrCat(kind_name_, " ", name(), ": ", on_demand));
  }
  AttemptEnd end = restart.end;
  end.counted = restart.counted;
  end.message = msg;
  reconcile::CloseAttempt(job_, recovery_.current(), recovery_.attempt(), start, end, now_,
                          status());
  OpenAttempt(status(), status().coach().attempt(), now_);
  MarkRestarting(status(), kind_name_, msg, now_);
  Event(restart.counted ? "Warning" : "Normal", kind_name_ + api::v1::kJobRestartingReason, msg);
  // In place: each pod's coach-launch stops its ranks and starts the next attempt's once every
  // rank of this one is gone (the launch directive). Otherwise every replica of the attempt
  // goes, its Service stays (the next attempt's pods have the same names); nothing of the next
  // attempt starts until they are gone (ReconcileReplicas).
  if (in_place) return;
  for (const ObservedPod& pod : observed_.pods) {
    if (!pod.deleting) Delete("Pod", pod.name, pod.uid);
  }
}

// How often a job waiting for its ranks' checkpoint answers looks at them.
constexpr absl::Duration kNoticePoll = absl::Seconds(2);

// Job scope: a trigger among the current attempt's pods restarts the whole job, or fails it.
// True when the pass is decided (restarted or failed).
bool Pass::RecoverJob() {
  // A pod about to go: its ranks save a checkpoint first (notice.h), and the job restarts
  // (not counted) when they have, or when time is up.
  const NoticeDecision notice = DecideOnNotice(
      job_, recovery_.current(), recovery_.AttemptRunning(), observed_.checkpoint, config_, now_);
  switch (notice.kind) {
    case NoticeDecision::Kind::kNone:
      break;
    case NoticeDecision::Kind::kRequest:
      result_.request_checkpoint = notice.grace;
      Event("Normal", kind_name_ + "CheckpointOnNotice",
            absl::StrCat(kind_name_, " ", name(), ": ", notice.pod->replica_type, " replica ",
                         notice.pod->index, " got notice (", notice.pod->notice,
                         "); every rank is asked to save a checkpoint within ",
                         absl::FormatDuration(notice.grace)));
      // The answers come with the pods' reports, which need not wake the job: look again soon.
      RequeueBy(now_ + std::min(notice.grace, kNoticePoll));
      return false;
    case NoticeDecision::Kind::kWait:
      RequeueBy(std::min(notice.until, now_ + kNoticePoll));
      return false;
    case NoticeDecision::Kind::kRestart: {
      RecoveryDecision restart;
      restart.kind = RecoveryDecision::Kind::kRestart;
      restart.why = notice.why;
      restart.end.pod = notice.pod;
      restart.end.reason = notice.pod->disruption.empty() ? "Disrupted" : PodEndReason(*notice.pod);
      RestartJob(restart);
      return true;
    }
  }
  const RecoveryDecision decision =
      recovery_.DecideJobScope(HasTrueCondition(status(), kJobRunning), result_.requeue_at);
  switch (decision.kind) {
    case RecoveryDecision::Kind::kNone:
      return false;
    case RecoveryDecision::Kind::kFail:
      FailRecovery(decision);
      return true;
    case RecoveryDecision::Kind::kRestart:
      RestartJob(decision);
      return true;
  }
  return false;
}

void Pass::NoteAttemptRunning() {
  if (!recovery_.AttemptStartsRunning(result_.requeue_at)) return;
  api::v1::CoachJobStatus& coach = *status().mutable_coach();
  coach.set_attempt(recovery_.attempt());
  *coach.mutable_attempt_running_time() = ToTimestamp(now_);
}

void Pass::NoteElasticWorkers() {
  const std::optional<ElasticRange> elastic = ElasticWorkers(job_);
  if (!elastic || recovery_.JobScope() || IsFinished(status())) return;
  if (std::optional<ElasticEvent> e = NoteWorkers(*elastic, Replicas(job_, elastic->type),
                                                  recovery_.current(), now_, status())) {
    Event(e->type, e->reason, e->message);
  }
}

bool Pass::StalledUnderReplicaScope() {
  const RecoveryDecision decision = recovery_.DecideReplicaScopeStall(
      HasTrueCondition(status(), kJobRunning), result_.requeue_at);
  if (decision.kind != RecoveryDecision::Kind::kFail) return false;
  FailRecovery(decision);
  return true;
}

}  // namespace coach::reconcile::pass_internal
