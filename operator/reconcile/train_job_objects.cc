#include "operator/reconcile/train_job_objects.h"

#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/quantity.h"

namespace coach::reconcile {
namespace {

using nlohmann::json;
using Resources = std::map<std::string, Quantity>;

const json& At(const json& object, const char* key) {
  static const json* const kNull = new json();
  if (!object.is_object()) return *kNull;
  auto it = object.find(key);
  return it == object.end() ? *kNull : *it;
}

void AddTo(Resources& sum, const Resources& more) {
  for (const auto& [name, q] : more) {
    auto it = sum.find(name);
    if (it == sum.end()) {
      sum.emplace(name, q);
    } else {
      it->second.Add(q);
    }
  }
}

void MaxInto(Resources& into, const Resources& other) {
  for (const auto& [name, q] : other) {
    auto it = into.find(name);
    if (it == into.end() || it->second < q) into.insert_or_assign(name, q);
  }
}

// A resource list's quantities; one the API server would have refused adds nothing.
Resources ListOf(const json& list) {
  Resources out;
  if (!list.is_object()) return out;
  for (const auto& [name, value] : list.items()) {
    std::optional<Quantity> q;
    if (value.is_string()) q = Quantity::Parse(value.get<std::string>());
    if (value.is_number()) q = Quantity::Parse(value.dump());
    if (q) out.emplace(name, *q);
  }
  return out;
}

// k8s.io/component-helpers resource.PodRequests with default options: the containers' requests,
// raised to any init container's (sidecars, restartPolicy Always, run beside both), plus the
// pod's overhead.
Resources PodRequests(const json& pod_spec) {
  Resources containers;
  const json& list = At(pod_spec, "containers");
  if (list.is_array()) {
    for (const json& c : list) AddTo(containers, ListOf(At(At(c, "resources"), "requests")));
  }
  Resources sidecars, init_peak;
  const json& inits = At(pod_spec, "initContainers");
  if (inits.is_array()) {
    for (const json& c : inits) {
      const Resources requests = ListOf(At(At(c, "resources"), "requests"));
      if (At(c, "restartPolicy") == "Always") {
        AddTo(containers, requests);
        AddTo(sidecars, requests);
        MaxInto(init_peak, sidecars);
      } else {
        Resources during = sidecars;
        AddTo(during, requests);
        MaxInto(init_peak, during);
      }
    }
  }
  MaxInto(containers, init_peak);
  AddTo(containers, ListOf(At(pod_spec, "overhead")));
  return containers;
}

json ToJson(const Resources& resources) {
  json out = json::object();
  for (const auto& [name, q] : resources) out[name] = q.ToString();
  return out;
}

}  // namespace

json MpiSshAuthSecret(const std::string& train_job_name, const std::string& ns,
                      const json& owners) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", absl::StrCat(train_job_name, kMpiSshAuthSecretSuffix)},
            {"namespace", ns},
            {"ownerReferences", owners}}},
          {"type", "kubernetes.io/ssh-auth"},
          {"immutable", true}};
}

std::vector<json> VolumeClaims(const json& job_set, const json& owners) {
  std::vector<json> claims;
  const json& policies = At(At(job_set, "spec"), "volumeClaimPolicies");
  if (!policies.is_array()) return claims;
  const json& meta = At(job_set, "metadata");
  const std::string js_name =
      At(meta, "name").is_string() ? At(meta, "name").get<std::string>() : std::string();
  const json& ns = At(meta, "namespace");
  for (const json& policy : policies) {
    // JobSet sets the owner only for an explicit retentionPolicy.whenDeleted: Delete (the CRD
    // defaults whenDeleted inside a retentionPolicy that is there).
    const json& retention = At(policy, "retentionPolicy");
    const bool owned = retention.is_object() && At(retention, "whenDeleted") != "Retain";
    const json& templates = At(policy, "templates");
    if (!templates.is_array()) continue;
    for (const json& t : templates) {
      const json& tmeta = At(t, "metadata");
      if (!At(tmeta, "name").is_string()) continue;
      json labels = At(tmeta, "labels").is_object() ? At(tmeta, "labels") : json::object();
      labels["jobset.sigs.k8s.io/jobset-name"] = js_name;
      json claim = {{"apiVersion", "v1"},
                    {"kind", "PersistentVolumeClaim"},
                    {"metadata",
                     {{"name", absl::StrCat(At(tmeta, "name").get<std::string>(), "-", js_name)},
                      {"namespace", ns},
                      {"labels", std::move(labels)}}},
                    {"spec", At(t, "spec").is_object() ? At(t, "spec") : json::object()}};
      if (At(tmeta, "annotations").is_object()) {
        claim["metadata"]["annotations"] = At(tmeta, "annotations");
      }
      if (owned) claim["metadata"]["ownerReferences"] = owners;
      claims.push_back(std::move(claim));
    }
  }
  return claims;
}

absl::StatusOr<TrainJobGang> GangOf(const json& job_set, const json& pod_group_policy,
                                    const model::ReconcileConfig& config, std::vector<json*>& pods,
                                    const json& owners) {
  TrainJobGang gang;
  const bool coscheduling = At(pod_group_policy, "coscheduling").is_object();
  const bool volcano = At(pod_group_policy, "volcano").is_object();
  // The local backend (it brings its own address plan) starts a job's processes together: there
  // is no scheduler to gang.
  if ((!coscheduling && !volcano) || config.address_plan != nullptr) return gang;
  const model::GangScheduler wanted =
      coscheduling ? model::GangScheduler::kSchedulerPlugins : model::GangScheduler::kVolcano;
  if (config.gang_scheduler != wanted) {
    return absl::FailedPreconditionError(absl::StrCat(
        "spec.podGroupPolicy.", coscheduling ? "coscheduling" : "volcano",
        " of the runtime needs the operator's --gang-scheduler=",
        coscheduling ? "scheduler-plugins" : "volcano", " (it runs with ",
        config.gang_scheduler == model::GangScheduler::kNone      ? "none"
        : config.gang_scheduler == model::GangScheduler::kVolcano ? "volcano"
                                                                  : "scheduler-plugins",
        ")"));
  }
  const json& meta = At(job_set, "metadata");
  const std::string name =
      At(meta, "name").is_string() ? At(meta, "name").get<std::string>() : std::string();
  Resources total;
  std::string priority_class;
  for (json* pod : pods) {
    const json& spec = At(*pod, "spec");
    AddTo(total, PodRequests(spec));
    if (At(spec, "priorityClassName").is_string()) {
      priority_class = At(spec, "priorityClassName").get<std::string>();
    }
    if (coscheduling) {
      (*pod)["metadata"]["labels"][kPodGroupLabelCoscheduling] = name;
    } else {
      (*pod)["metadata"]["annotations"][kPodGroupAnnotationVolcano] = name;
    }
  }
  json spec = {{"minMember", static_cast<int64_t>(pods.size())}, {"minResources", ToJson(total)}};
  if (coscheduling) {
    const json& timeout = At(At(pod_group_policy, "coscheduling"), "scheduleTimeoutSeconds");
    spec["scheduleTimeoutSeconds"] = timeout.is_number_integer() ? timeout.get<int64_t>() : 60;
  } else {
    const json& queue = At(At(meta, "annotations"), "scheduling.volcano.sh/queue-name");
    if (queue.is_string()) spec["queue"] = queue;
    if (!priority_class.empty()) spec["priorityClassName"] = priority_class;
    const json& topology = At(At(pod_group_policy, "volcano"), "networkTopology");
    if (topology.is_object()) spec["networkTopology"] = topology;
  }
  gang.pod_group = {
      {"apiVersion",
       coscheduling ? "scheduling.x-k8s.io/v1alpha1" : "scheduling.volcano.sh/v1beta1"},
      {"kind", "PodGroup"},
      {"metadata",
       {{"name", name}, {"namespace", At(meta, "namespace")}, {"ownerReferences", owners}}},
      {"spec", std::move(spec)}};
  return gang;
}

}  // namespace coach::reconcile
