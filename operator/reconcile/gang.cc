#include "operator/reconcile/gang.h"

#include "operator/reconcile/replicas.h"

namespace coach::reconcile {

using model::GangScheduler;
using model::Json;

std::optional<model::KubeObject> DesiredPodGroup(const model::Job& job,
                                                 const model::ReconcileConfig& config) {
  if (config.gang_scheduler == GangScheduler::kNone) return std::nullopt;
  const auto& sp = job.spec().run_policy().scheduling_policy();
  const bool has_sp = job.spec().run_policy().has_scheduling_policy();
  Json spec = Json::object();
  spec["minMember"] = has_sp && sp.has_min_available() ? sp.min_available() : TotalReplicas(job);
  Json min_resources = Json::object();
  if (has_sp) {
    for (const auto& [k, v] : sp.min_resources()) min_resources[k] = v;
  }
  std::string api_version;
  if (config.gang_scheduler == GangScheduler::kVolcano) {
    api_version = "scheduling.volcano.sh/v1beta1";
    if (has_sp && !sp.queue().empty()) spec["queue"] = sp.queue();
    if (has_sp && !sp.priority_class().empty()) spec["priorityClassName"] = sp.priority_class();
  } else {
    api_version = "scheduling.x-k8s.io/v1alpha1";
    if (has_sp && sp.has_schedule_timeout_seconds()) {
      spec["scheduleTimeoutSeconds"] = sp.schedule_timeout_seconds();
    }
  }
  if (!min_resources.empty()) spec["minResources"] = min_resources;
  const std::string& name = job.metadata().name();
  Json body = {{"apiVersion", api_version},
               {"kind", "PodGroup"},
               {"metadata",
                {{"name", name},
                 {"namespace", job.metadata().namespace_()},
                 {"ownerReferences", OwnerReferences(job)}}},
               {"spec", spec}};
  return model::KubeObject{api_version, "PodGroup", name, job.metadata().namespace_(),
                           std::move(body)};
}

void DecorateForGang(const model::Job& job, const std::string& replica_type,
                     const model::ReconcileConfig& config, Json& pod_template) {
  if (config.gang_scheduler == GangScheduler::kNone) return;
  if (!pod_template.contains("spec") || !pod_template["spec"].is_object()) {
    pod_template["spec"] = Json::object();
  }
  Json& spec = pod_template["spec"];
  Json& meta = pod_template["metadata"];
  const std::string scheduler = config.gang_scheduler == GangScheduler::kVolcano
                                    ? kVolcanoSchedulerName
                                    : config.scheduler_plugins_scheduler_name;
  // A user's own scheduler is kept (upstream warns and does not override).
  if (spec.value("schedulerName", "").empty()) spec["schedulerName"] = scheduler;
  if (config.gang_scheduler == GangScheduler::kVolcano) {
    meta["annotations"]["scheduling.k8s.io/group-name"] = job.metadata().name();
    meta["annotations"]["volcano.sh/task-spec"] = Lower(replica_type);
  } else {
    meta["labels"]["scheduling.x-k8s.io/pod-group"] = job.metadata().name();
  }
}

}  // namespace coach::reconcile
