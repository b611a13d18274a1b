#include "operator/reconcile/success_rule.h"

#include <string_view>

#include "api/v1/job_policies.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

using api::v1::kReplicaWorker;

JobProgress EvaluateSuccessRule(
    const api::v1::KindInfo& kind, const model::Job& job,
    const google::protobuf::Map<std::string, api::v1::ReplicaStatus>& statuses,
    bool worker0_succeeded) {
  const api::v1::SuccessRule& rule = kind.success;
  auto get = [&](std::string_view type) {
    auto it = statuses.find(std::string(type));
    return it == statuses.end() ? api::v1::ReplicaStatus() : it->second;
  };
  auto all_succeeded = [&](std::string_view type) {
    return Replicas(job, type) - get(type).succeeded() == 0;
  };
  JobProgress out;
  for (std::string_view leader : rule.leaders) {
    if (!HasReplicaType(job, leader)) continue;
    const api::v1::ReplicaStatus s = get(leader);
    out.succeeded = rule.leader_any_succeeded ? s.succeeded() > 0 : all_succeeded(leader);
    // The leader's active replicas alone: upstream v1.9's MPIJob is Running on an active
    // Launcher too (mpijob_controller.go UpdateJobStatus; the all-workers check in its
    // updateMPIJobStatus writes a status that UpdateJobStatus then replaces).
    out.running = s.active() > 0;
    return out;
  }
  if (!rule.workers_decide_without_leader) return out;
  out.running = get(kReplicaWorker).active() > 0;
  if (!HasReplicaType(job, kReplicaWorker)) return out;
  if (rule.worker0_decides && job.spec().success_policy() != api::v1::kSuccessPolicyAllWorkers) {
    out.succeeded = worker0_succeeded;
  } else {
    out.succeeded = all_succeeded(kReplicaWorker) ||
                    (rule.elastic_any_worker && job.spec().has_elastic_policy() &&
                     get(kReplicaWorker).succeeded() > 0);
  }
  return out;
}

}  // namespace coach::reconcile
