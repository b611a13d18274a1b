#include "integrations/karpenter/placement.h"

#include <vector>

namespace coach::karpenter {
namespace {

using Json = nlohmann::json;

constexpr const char* kAcceleratorResources[] = {"nvidia.com/gpu", "amd.com/gpu",
                                                 "aws.amazon.com/neuron"};

// parent[key] as an object, made one when missing or null; nullptr when the user put
// something else there (theirs stays).
Json* ObjectAt(Json& parent, const char* key) {
  Json& value = parent[key];
  if (value.is_null()) value = Json::object();
  return value.is_object() ? &value : nullptr;
}

Json* ArrayAt(Json& parent, const char* key) {
  Json& value = parent[key];
  if (value.is_null()) value = Json::array();
  return value.is_array() ? &value : nullptr;
}

// Read-only walk: j[k1][k2]... or null.
const Json& At(const Json& j, std::initializer_list<const char*> path) {
  static const Json kNull;
  const Json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(key);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

bool TermNames(const Json& term, const std::string& key) {
  const Json& expressions = At(term, {"matchExpressions"});
  if (!expressions.is_array()) return false;
  for (const Json& e : expressions) {
    if (e.is_object() && e.value("key", "") == key) return true;
  }
  return false;
}

// Whether the user's template says anything about node label `key`.
bool UserConstrainsNodeLabel(const Json& spec, const std::string& key) {
  if (At(spec, {"nodeSelector"}).is_object() && At(spec, {"nodeSelector"}).contains(key)) {
    return true;
  }
  const Json& node_affinity = At(spec, {"affinity", "nodeAffinity"});
  const Json& required =
      At(node_affinity, {"requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  if (required.is_array()) {
    for (const Json& term : required) {
      if (TermNames(term, key)) return true;
    }
  }
  const Json& preferred = At(node_affinity, {"preferredDuringSchedulingIgnoredDuringExecution"});
  if (preferred.is_array()) {
    for (const Json& p : preferred) {
      if (TermNames(At(p, {"preference"}), key)) return true;
    }
  }
  return false;
}

struct Requirement {
  std::string key;
  std::string op;  // In | NotIn
  std::vector<std::string> values;
};

// ANDs the requirement into every required node selector term (one new term when there is
// none): terms are ORed, so adding it to only one would let the others escape it.
void AddRequirement(Json& spec, const Requirement& r) {
  Json* affinity = ObjectAt(spec, "affinity");
  if (affinity == nullptr) return;
  Json* node_affinity = ObjectAt(*affinity, "nodeAffinity");
  if (node_affinity == nullptr) return;
  Json* required = ObjectAt(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution");
  if (required == nullptr) return;
  Json* terms = ArrayAt(*required, "nodeSelectorTerms");
  if (terms == nullptr) return;
  const Json expression = {{"key", r.key}, {"operator", r.op}, {"values", r.values}};
  if (terms->empty()) terms->push_back(Json::object());
  for (Json& term : *terms) {
    if (!term.is_object()) continue;
    Json* expressions = ArrayAt(term, "matchExpressions");
    if (expressions != nullptr) expressions->push_back(expression);
  }
}

void AddNodeSelector(Json& spec, const std::string& key, const std::string& value) {
  Json* selector = ObjectAt(spec, "nodeSelector");
  if (selector != nullptr) (*selector)[key] = value;
}

void TolerateTaint(Json& spec, const Taint& taint) {
  if (taint.key.empty()) return;
  Json* tolerations = ArrayAt(spec, "tolerations");
  if (tolerations == nullptr) return;
  for (const Json& t : *tolerations) {
    if (!t.is_object()) continue;
    const std::string key = t.value("key", "");
    // The same key (whatever it says about it), or an empty key with Exists: tolerates all.
    if (key == taint.key) return;
    if (key.empty() && t.value("operator", "") == "Exists") return;
  }
  // Exists, not Equal: a pool whose taint value changes keeps its replicas schedulable.
  tolerations->push_back({{"key", taint.key}, {"operator", "Exists"}, {"effect", taint.effect}});
}

bool UserPlacesZone(const Json& spec) {
  if (UserConstrainsNodeLabel(spec, kLabelZone)) return true;
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    const Json& required =
        At(spec, {"affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution"});
    if (required.is_array()) {
      for (const Json& term : required) {
        if (term.is_object() && term.value("topologyKey", "") == kLabelZone) return true;
      }
    }
    const Json& preferred =
        At(spec, {"affinity", kind, "preferredDuringSchedulingIgnoredDuringExecution"});
    if (preferred.is_array()) {
      for (const Json& p : preferred) {
        if (At(p, {"podAffinityTerm", "topologyKey"}) == kLabelZone) return true;
      }
    }
  }
  const Json& spread = At(spec, {"topologySpreadConstraints"});
  if (spread.is_array()) {
    for (const Json& c : spread) {
      if (c.is_object() && c.value("topologyKey", "") == kLabelZone) return true;
    }
  }
  return false;
}

void KeepInOneZone(Json& spec, ZonePolicy policy,
                   const std::map<std::string, std::string>& labels) {
  if (policy == ZonePolicy::kNone || labels.empty() || UserPlacesZone(spec)) return;
  Json* affinity = ObjectAt(spec, "affinity");
  if (affinity == nullptr) return;
  Json* pod_affinity = ObjectAt(*affinity, "podAffinity");
  if (pod_affinity == nullptr) return;
  const Json term = {{"labelSelector", {{"matchLabels", labels}}}, {"topologyKey", kLabelZone}};
  if (policy == ZonePolicy::kRequired) {
    Json* required = ArrayAt(*pod_affinity, "requiredDuringSchedulingIgnoredDuringExecution");
    if (required != nullptr) required->push_back(term);
  } else {
    Json* preferred = ArrayAt(*pod_affinity, "preferredDuringSchedulingIgnoredDuringExecution");
    if (preferred != nullptr) preferred->push_back({{"weight", 100}, {"podAffinityTerm", term}});
  }
}

void ProtectFromDisruption(Json& pod_template) {
  Json* metadata = ObjectAt(pod_template, "metadata");
  if (metadata == nullptr) return;
  Json* annotations = ObjectAt(*metadata, "annotations");
  if (annotations != nullptr && !annotations->contains(kAnnotationDoNotDisrupt)) {
    (*annotations)[kAnnotationDoNotDisrupt] = "true";
  }
}

// parent[key] when it is there and of `type`; nothing is created.
Json* Existing(Json& parent, const char* key, Json::value_t type) {
  if (!parent.is_object()) return nullptr;
  auto it = parent.find(key);
  return it != parent.end() && it->type() == type ? &*it : nullptr;
}

// Whether a node selector term selects on nothing: Kubernetes matches no node with it. A
// field of the wrong type counts as something (the API server will say what is wrong).
bool IsEmptyTerm(const Json& term) {
  if (!term.is_object()) return false;
  for (const char* field : {"matchExpressions", "matchFields"}) {
    const Json& value = At(term, {field});
    if (!value.is_null() && !(value.is_array() && value.empty())) return false;
  }
  return true;
}

// Drops the term's expressions on `key`; whether there were any.
bool DropExpressionsOn(Json& term, const char* key) {
  Json* expressions = Existing(term, "matchExpressions", Json::value_t::array);
  if (expressions == nullptr) return false;
  Json kept = Json::array();
  for (Json& e : *expressions) {
    if (At(e, {"key"}) != key) kept.push_back(std::move(e));
  }
  const bool dropped = kept.size() != expressions->size();
  if (kept.empty()) {
    term.erase("matchExpressions");
  } else {
    *expressions = std::move(kept);
  }
  return dropped;
}

// Takes out everything the template says about the capacity type, then asks for on-demand.
void ForceOnDemand(Json& spec) {
  if (Json* selector = Existing(spec, "nodeSelector", Json::value_t::object)) {
    selector->erase(kLabelCapacityType);
  }
  Json* affinity = Existing(spec, "affinity", Json::value_t::object);
  Json* node_affinity =
      affinity == nullptr ? nullptr : Existing(*affinity, "nodeAffinity", Json::value_t::object);
  if (node_affinity != nullptr) {
    constexpr char kRequired[] = "requiredDuringSchedulingIgnoredDuringExecution";
    constexpr char kPreferred[] = "preferredDuringSchedulingIgnoredDuringExecution";
    bool dropped = false;
    Json* required = Existing(*node_affinity, kRequired, Json::value_t::object);
    Json* terms = required == nullptr
                      ? nullptr
                      : Existing(*required, "nodeSelectorTerms", Json::value_t::array);
    if (terms != nullptr) {
      // A term left with nothing asked only for a capacity type. Without it the term admits
      // every node, and as terms are ORed so does the whole requirement: it goes. Left empty,
      // the term would match no node instead (and an empty term list is refused).
      bool admits_all = false;
      for (Json& term : *terms) {
        if (DropExpressionsOn(term, kLabelCapacityType) && IsEmptyTerm(term)) admits_all = true;
      }
      if (admits_all) {
        node_affinity->erase(kRequired);
        dropped = true;
      }
    }
    if (Json* preferred = Existing(*node_affinity, kPreferred, Json::value_t::array)) {
      // A preference left with nothing would weigh nothing: it goes too.
      Json kept = Json::array();
      for (Json& p : *preferred) {
        Json* preference = Existing(p, "preference", Json::value_t::object);
        if (preference != nullptr && DropExpressionsOn(*preference, kLabelCapacityType) &&
            IsEmptyTerm(*preference)) {
          continue;
        }
        kept.push_back(std::move(p));
      }
      dropped |= kept.size() != preferred->size();
      if (kept.empty()) {
        node_affinity->erase(kPreferred);
      } else {
        *preferred = std::move(kept);
      }
    }
    if (dropped && node_affinity->empty()) affinity->erase("nodeAffinity");
    if (dropped && affinity->empty()) spec.erase("affinity");
  }
  AddNodeSelector(spec, kLabelCapacityType, "on-demand");
}

bool ContainersRequestAccelerator(const Json& containers) {
  if (!containers.is_array()) return false;
  for (const Json& c : containers) {
    for (const char* field : {"limits", "requests"}) {
      const Json& resources = At(c, {"resources", field});
      if (!resources.is_object()) continue;
      for (const char* name : kAcceleratorResources) {
        if (resources.contains(name)) return true;
      }
    }
  }
  return false;
}

}  // namespace

bool GoesOnDemand(const JobOptions& options, int interruptions) {
  return options.on_demand_after.has_value() && interruptions >= *options.on_demand_after;
}

bool RequestsAccelerator(const Json& pod_template) {
  return ContainersRequestAccelerator(At(pod_template, {"spec", "containers"})) ||
         ContainersRequestAccelerator(At(pod_template, {"spec", "initContainers"}));
}

absl::Status ApplyPlacement(const Config& config, const JobFacts& job, Json& pod_template) {
  absl::StatusOr<JobOptions> options = ParseJobOptions(job.annotations);
  if (!options.ok()) return options.status();
  const bool enabled = options->enabled.value_or(config.enabled);
  const bool on_demand = GoesOnDemand(*options, job.interruptions);
  if (!enabled && !on_demand) return absl::OkStatus();
  if (!pod_template.is_object()) return absl::OkStatus();
  Json* spec = ObjectAt(pod_template, "spec");
  if (spec == nullptr) return absl::OkStatus();
  // First: what the override took out of the template no longer holds coach back below.
  if (on_demand) ForceOnDemand(*spec);
  if (!enabled) return absl::OkStatus();

  const bool accelerator = RequestsAccelerator(pod_template);
  // Decided against the user's template before coach adds anything.
  std::vector<Requirement> requirements;
  std::vector<std::pair<std::string, std::string>> selectors;
  if (accelerator) {
    if (!config.gpu_nodepool.empty()) selectors.emplace_back(kLabelNodePool, config.gpu_nodepool);
    if (!options->gpu_instance_families.empty()) {
      requirements.push_back({kLabelInstanceFamily, "In", options->gpu_instance_families});
    }
    if (!options->gpu_names.empty()) {
      requirements.push_back({kLabelInstanceGpuName, "In", options->gpu_names});
    }
  } else {
    if (!config.cpu_nodepool.empty()) {
      selectors.emplace_back(kLabelNodePool, config.cpu_nodepool);
    } else if (!config.gpu_nodepool.empty()) {
      requirements.push_back({kLabelNodePool, "NotIn", {config.gpu_nodepool}});
    }
    if (!options->cpu_instance_families.empty()) {
      requirements.push_back({kLabelInstanceFamily, "In", options->cpu_instance_families});
    }
  }
  if (!options->capacity_types.empty() && !on_demand) {
    requirements.push_back({kLabelCapacityType, "In", options->capacity_types});
  }
  std::vector<bool> user_has_selector;
  for (const auto& s : selectors)
    user_has_selector.push_back(UserConstrainsNodeLabel(*spec, s.first));
  std::vector<bool> user_has_requirement;
  for (const Requirement& r : requirements) {
    user_has_requirement.push_back(UserConstrainsNodeLabel(*spec, r.key));
  }

  for (size_t i = 0; i < selectors.size(); ++i) {
    if (!user_has_selector[i]) AddNodeSelector(*spec, selectors[i].first, selectors[i].second);
  }
  for (size_t i = 0; i < requirements.size(); ++i) {
    if (!user_has_requirement[i]) AddRequirement(*spec, requirements[i]);
  }
  if (accelerator) TolerateTaint(*spec, config.gpu_taint);
  KeepInOneZone(*spec, options->zone_policy.value_or(config.zone_policy), job.pod_labels);
  ProtectFromDisruption(pod_template);
  return absl::OkStatus();
}

}  // namespace coach::karpenter
