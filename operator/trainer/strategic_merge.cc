#include "operator/trainer/strategic_merge.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace coach::trainer {
namespace {

struct ListKey {
  const char* field;
  const char* key;
  // Lists that a patch may only merge into: an element the base lacks is an error.
  bool must_exist;
};

// patchMergeKey of the core/v1 and jobset/v1alpha2 types under a JobSet spec.
constexpr ListKey kListKeys[] = {
    {"replicatedJobs", "name", true},
    {"containers", "name", true},
    {"initContainers", "name", true},
    {"ephemeralContainers", "name", false},
    {"env", "name", false},
    {"volumes", "name", false},
    {"volumeMounts", "mountPath", false},
    {"volumeDevices", "devicePath", false},
    {"ports", "containerPort", false},
    {"imagePullSecrets", "name", false},
    {"hostAliases", "ip", false},
    {"topologySpreadConstraints", "topologyKey", false},
    {"resourceClaims", "name", false},
    {"schedulingGates", "name", false},
};

const ListKey* FindListKey(const std::string& field) {
  for (const ListKey& k : kListKeys) {
    if (field == k.field) return &k;
  }
  return nullptr;
}

bool IsMergeKeyValue(const nlohmann::json& v) { return v.is_string() || v.is_number_integer(); }

absl::Status MergeValue(nlohmann::json& base, const nlohmann::json& patch, const std::string& path);

absl::Status MergeKeyedList(nlohmann::json& base, const nlohmann::json& patch, const ListKey& key,
                            const std::string& path) {
  for (size_t i = 0; i < patch.size(); ++i) {
    const std::string elem_path = absl::StrCat(path, "[", i, "]");
    const nlohmann::json& p = patch[i];
    if (!p.is_object() || !p.contains(key.key) || !IsMergeKeyValue(p[std::string(key.key)])) {
      return absl::InvalidArgumentError(
          absl::StrCat(elem_path, ".", key.key, ": required to merge into ", key.field));
    }
    const nlohmann::json& want = p[std::string(key.key)];
    nlohmann::json* match = nullptr;
    for (nlohmann::json& b : base) {
      if (b.is_object() && b.contains(key.key) && b[std::string(key.key)] == want) {
        match = &b;
        break;
      }
    }
    if (match != nullptr) {
      RETURN_IF_ERROR(MergeValue(*match, p, elem_path));
    } else if (key.must_exist) {
      return absl::InvalidArgumentError(absl::StrCat(elem_path, ".", key.key,
                                                     ": the runtime has no ", key.field,
                                                     " element named ", want.dump()));
    } else {
      nlohmann::json added = nlohmann::json::object();
      RETURN_IF_ERROR(MergeValue(added, p, elem_path));
      base.push_back(std::move(added));
    }
  }
  return absl::OkStatus();
}

absl::Status MergeObject(nlohmann::json& base, const nlohmann::json& patch,
                         const std::string& path) {
  for (const auto& [field, value] : patch.items()) {
    const std::string field_path = path.empty() ? field : absl::StrCat(path, ".", field);
    if (!field.empty() && field[0] == '$') {
      return absl::InvalidArgumentError(
          absl::StrCat(field_path, ": strategic merge directives are not supported"));
    }
    if (value.is_null()) {
      base.erase(field);
      continue;
    }
    const ListKey* key = FindListKey(field);
    if (key != nullptr && value.is_array()) {
      nlohmann::json& target = base[field];
      if (!target.is_array()) target = nlohmann::json::array();
      RETURN_IF_ERROR(MergeKeyedList(target, value, *key, field_path));
      continue;
    }
    RETURN_IF_ERROR(MergeValue(base[field], value, field_path));
  }
  return absl::OkStatus();
}

absl::Status MergeValue(nlohmann::json& base, const nlohmann::json& patch,
                        const std::string& path) {
  if (patch.is_object()) {
    if (!base.is_object()) base = nlohmann::json::object();
    return MergeObject(base, patch, path);
  }
  base = patch;
  return absl::OkStatus();
}

}  // namespace

absl::Status StrategicMerge(nlohmann::json& base, const nlohmann::json& patch,
                            const std::string& path) {
  return MergeValue(base, patch, path);
}

}  // namespace coach::trainer
