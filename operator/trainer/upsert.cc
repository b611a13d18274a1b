#include "operator/trainer/upsert.h"

#include <string>

namespace coach::trainer {
namespace {

template <typename Matches>
void Upsert(nlohmann::json& list, const nlohmann::json& item, Matches matches) {
  if (!list.is_array()) list = nlohmann::json::array();
  for (nlohmann::json& existing : list) {
    if (matches(existing)) {
      existing = item;
      return;
    }
  }
  list.push_back(item);
}

nlohmann::json FieldOrNull(const nlohmann::json& obj, const char* field) {
  return obj.is_object() && obj.contains(field) ? obj[field] : nlohmann::json();
}

}  // namespace

void UpsertEnv(nlohmann::json& list, const nlohmann::json& env_var) {
  Upsert(list, env_var, [&](const nlohmann::json& e) {
    return FieldOrNull(e, "name") == FieldOrNull(env_var, "name");
  });
}

void UpsertPort(nlohmann::json& list, const nlohmann::json& port) {
  Upsert(list, port, [&](const nlohmann::json& p) {
    return FieldOrNull(p, "containerPort") == FieldOrNull(port, "containerPort") ||
           FieldOrNull(p, "name") == FieldOrNull(port, "name");
  });
}

void UpsertVolume(nlohmann::json& list, const nlohmann::json& volume) {
  Upsert(list, volume, [&](const nlohmann::json& v) {
    return FieldOrNull(v, "name") == FieldOrNull(volume, "name");
  });
}

void UpsertVolumeMount(nlohmann::json& list, const nlohmann::json& mount) {
  Upsert(list, mount, [&](const nlohmann::json& m) {
    return FieldOrNull(m, "mountPath") == FieldOrNull(mount, "mountPath");
  });
}

nlohmann::json EnvValue(std::string_view name, std::string_view value) {
  return {{"name", std::string(name)}, {"value", std::string(value)}};
}

nlohmann::json EnvFieldRef(std::string_view name, std::string_view field_path) {
  return {{"name", std::string(name)},
          {"valueFrom", {{"fieldRef", {{"fieldPath", std::string(field_path)}}}}}};
}

nlohmann::json* FindNamed(nlohmann::json& list, std::string_view name) {
  if (!list.is_array()) return nullptr;
  for (nlohmann::json& e : list) {
    if (e.is_object() && e.contains("name") && e["name"].is_string() &&
        e["name"].get<std::string>() == name) {
      return &e;
    }
  }
  return nullptr;
}

}  // namespace coach::trainer
