#pragma once

// The reconciler's pass (reconciler.h), shared by the files that define it: reconciler.cc (the
// pass itself: replicas, conditions, status) and pass_recovery.cc (applying recovery's
// decisions: restarts, notices, stalls, lost pods, an elastic job's Workers). Private to the
// reconciler library.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"
#include "api/v1/kinds.h"
#include "operator/model/job_plan.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"
#include "operator/reconcile/attempt_history.h"
#include "operator/reconcile/recovery.h"
#include "operator/reconcile/recovery_policy.h"

namespace coach::reconcile::pass_internal {

using api::v1::kJobFailedReason;
using api::v1::kJobRunning;
using api::v1::kJobSucceeded;
using api::v1::kJobSuspended;
using api::v1::kReplicaWorker;
using model::Action;
using model::JobPlan;
using model::KubeObject;
using model::ObservedPod;
using model::PodPhase;

// One pass: converges what the backend observed toward the job's plan. It reads the job's
// kind from nowhere but the plan; recovery decides (recovery.h), the pass applies.
class Pass {
 public:
  Pass(const JobPlan& plan, const model::ObservedState& observed, absl::Time now,
       const model::ReconcileConfig& config, const RecoveryPolicy& policy)
      : plan_(plan),
        job_(*plan.job),
        observed_(observed),
        now_(now),
        config_(config),
        kind_(*plan.kind),
        kind_name_(plan.kind->name),
        recovery_(job_, policy, observed_, result_.status, now_, config_) {
    result_.status = job_.status();
  }

  // `policy_error`: the job's recovery annotations are invalid (it fails, naming them).
  model::ReconcileResult Run(const absl::Status& policy_error);

 private:
  model::JobStatus& status() { return result_.status; }
  const model::JobStatus& status() const { return result_.status; }
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
  // restart created under the same name. `force`: with grace period 0.
  void Delete(const std::string& kind, const std::string& obj_name, const std::string& uid = "",
              bool force = false) {
    if (!deleted_.insert({kind, obj_name}).second) return;
    KubeObject obj;
    obj.api_version = kind == "PodGroup" ? PodGroupApiVersion() : "v1";
    obj.kind = kind;
    obj.name = obj_name;
    obj.namespace_ = job_.metadata().namespace_();
    if (!uid.empty()) obj.body = {{"metadata", {{"uid", uid}}}};
    if (force) {
      Event("Warning", "ForceDeletePod",
            absl::StrCat("Force-deleted pod ", obj_name, ": its node is lost and it was still ",
                         "terminating after ", absl::FormatDuration(config_.lost_node_grace)));
    } else {
      Event("Normal", "SuccessfulDelete" + kind,
            absl::StrCat("Deleted ", absl::AsciiStrToLower(kind), ": ", obj_name));
    }
    model::Action action{Action::Type::kDelete, std::move(obj)};
    action.force = force;
    result_.actions.push_back(std::move(action));
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
  // cleanPodPolicy after the job finished (or failed on a limit).
  void CleanUp() {
    const std::string& policy = plan_.clean_pod_policy;
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
  // `failed_type`: the replica type whose failure failed the job, when one did; JobSet's words
  // name it as the first failed Job. `end`: what the timeline says ended the attempt, when the
  // caller knows better than the reason and the failed type (attempt_history.h).
  void Fail(const std::string& reason, const std::string& message,
            const std::string& failed_type = "", AttemptEnd end = {});
  absl::Time AttemptStart() const {
    return reconcile::AttemptStart(status(), recovery_.attempt(), now_);
  }
  // The current attempt's entry in the timeline: its pods' nodes and, once they all ran, its
  // running time; closed by `end` when the job restarts or finishes.
  void NoteAttempt();
  void CloseAttempt(AttemptEnd end, const std::string& message);
  // The replica type reached `state` ("Complete": every pod succeeded; "Ready": every pod runs
  // or succeeded) in the current attempt.
  bool Reached(const std::string& type, const std::string& state) const;
  // The replica type may start: the types it depends on reached their state.
  bool DependenciesMet(const std::string& type) const;
  void UpdateJobsStatus();
  void ApplyTtl();
  void CreateSharedObjects();
  void ReconcileReplicas(std::map<std::string, bool>& nonretryable);
  void ReconcileServices(const std::string& type, int replicas);
  void UpdateConditions(const std::map<std::string, bool>& nonretryable);
  void ExplainPending();
  void NoteQueue(bool suspended);
  model::ReconcileResult Done();

  // Applying recovery's decisions.
  void ForceDeleteLostPods();
  bool InPlaceTimedOut();
  bool RecoverJob();
  void RestartJob(const RecoveryDecision& restart);
  void FailRecovery(const RecoveryDecision& failure);
  void NoteAttemptRunning();
  // An elastic job's Workers running now, and each change of that number (elastic.h).
  void NoteElasticWorkers();
  bool StalledUnderReplicaScope();
  void RequeueBy(absl::Time at) { reconcile::RequeueBy(result_.requeue_at, at); }

  const JobPlan& plan_;
  const model::Job& job_;
  const model::ObservedState& observed_;
  absl::Time now_;
  const model::ReconcileConfig& config_;
  const api::v1::KindInfo& kind_;
  std::string kind_name_;
  model::ReconcileResult result_;
  std::set<std::pair<std::string, std::string>> deleted_;
  // JobSet's reason for a failure on a limit (DeadlineExceeded, ReachedMaxRestarts), set by the
  // rule that fails the job; empty: FailedJobs.
  std::string upstream_failure_;
  Recovery recovery_;
};

}  // namespace coach::reconcile::pass_internal
