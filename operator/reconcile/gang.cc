#include "operator/reconcile/gang.h"

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/quantity.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

using model::GangScheduler;
using model::Json;

namespace {

// Volcano's queue when the job names none: upstream always writes it.
constexpr char kDefaultVolcanoQueue[] = "default";

// A quantity as the pod template spells it: a string, or a bare YAML number.
std::optional<Quantity> QuantityOf(const Json& value) {
  if (value.is_string()) return Quantity::Parse(value.get<std::string>());
  if (value.is_number()) return Quantity::Parse(value.dump());
  return std::nullopt;
}

}  // namespace

Json PodGroupMinResources(const model::Job& job, int min_member) {
  std::map<std::string, Quantity> sum;
  auto add = [&sum](const Json& list) {
    if (!list.is_object()) return;
    for (const auto& [name, value] : list.items()) {
      // The API server has checked a kube job's quantities; an unreadable one (a local job)
      // adds nothing rather than keeping the job from its PodGroup.
      std::optional<Quantity> q = QuantityOf(value);
      if (!q) continue;
      auto it = sum.find(name);
      if (it == sum.end()) {
        sum.emplace(name, *q);
      } else {
        it->second.Add(*q);
      }
    }
  };
  int pods = 0;
  for (const std::string& type : ReplicaTypes(job)) {
    absl::StatusOr<Json> tmpl = ParseTemplate(job, type);
    for (int i = 0; i < Replicas(job, type) && pods < min_member; ++i, ++pods) {
      if (!tmpl.ok() || !tmpl->contains("spec")) continue;
      const Json& containers = (*tmpl)["spec"].value("containers", Json::array());
      if (!containers.is_array()) continue;
      for (const Json& c : containers) {
        if (!c.is_object() || !c.contains("resources")) continue;
        const Json& res = c["resources"];
        if (!res.is_object()) continue;
        // Requests when the container has them at all (even {}), else its limits: upstream's
        // AddResourceList, not the API server's per-resource defaulting of requests to limits.
        if (res.contains("requests") && !res["requests"].is_null()) {
          add(res["requests"]);
        } else if (res.contains("limits")) {
          add(res["limits"]);
        }
      }
    }
  }
  Json out = Json::object();
  for (const auto& [name, q] : sum) out[name] = q.ToString();
  return out;
}

std::optional<model::KubeObject> DesiredPodGroup(const model::Job& job,
                                                 const model::ReconcileConfig& config) {
  if (config.gang_scheduler == GangScheduler::kNone) return std::nullopt;
  const auto& sp = job.spec().run_policy().scheduling_policy();
  const bool has_sp = job.spec().run_policy().has_scheduling_policy();
  Json spec = Json::object();
  const int min_member = has_sp && sp.has_min_available() ? sp.min_available() : TotalReplicas(job);
  spec["minMember"] = min_member;
  // Given minResources win; without them the scheduler is told what the first minMember
  // pods request, so that it admits the gang only where they all fit. (Upstream also keeps
  // an explicit {}; the job's proto map cannot tell {} from absent, so {} is computed too.)
  Json min_resources = Json::object();
  if (has_sp && !sp.min_resources().empty()) {
    for (const auto& [k, v] : sp.min_resources()) min_resources[k] = v;
  } else {
    min_resources = PodGroupMinResources(job, min_member);
  }
  std::string api_version;
  if (config.gang_scheduler == GangScheduler::kVolcano) {
    api_version = "scheduling.volcano.sh/v1beta1";
    spec["queue"] = has_sp && !sp.queue().empty() ? sp.queue() : kDefaultVolcanoQueue;
    if (has_sp && !sp.priority_class().empty()) spec["priorityClassName"] = sp.priority_class();
    // Volcano's minResources is a pointer that upstream always sets: {} is written too.
    spec["minResources"] = min_resources;
  } else {
    api_version = "scheduling.x-k8s.io/v1alpha1";
    if (has_sp && sp.has_schedule_timeout_seconds()) {
      spec["scheduleTimeoutSeconds"] = sp.schedule_timeout_seconds();
    }
    // scheduler-plugins' minResources is a plain map (omitempty): {} is left out.
    if (!min_resources.empty()) spec["minResources"] = min_resources;
  }
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
