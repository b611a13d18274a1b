#pragma once

// Upserts into Kubernetes list fields held as JSON, with upstream Trainer's matching rules
// (pkg/apply): an element that matches is replaced in place, any other is appended, so the
// order the runtime gave is kept.

#include <nlohmann/json.hpp>
#include <string_view>

namespace coach::trainer {

// Env vars match by name. `list` may be null (it becomes an array).
void UpsertEnv(nlohmann::json& list, const nlohmann::json& env_var);
// Ports match by containerPort or by name, where two absent names count as equal, as
// upstream's ptr.Equal does: a new unnamed port replaces an existing unnamed one.
void UpsertPort(nlohmann::json& list, const nlohmann::json& port);
// Volumes match by name, volume mounts by mountPath.
void UpsertVolume(nlohmann::json& list, const nlohmann::json& volume);
void UpsertVolumeMount(nlohmann::json& list, const nlohmann::json& mount);

// {"name": name, "value": value}.
nlohmann::json EnvValue(std::string_view name, std::string_view value);
// {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}.
nlohmann::json EnvFieldRef(std::string_view name, std::string_view field_path);

// The element of `list` (an array of objects, or null) whose "name" is `name`, else nullptr.
nlohmann::json* FindNamed(nlohmann::json& list, std::string_view name);

}  // namespace coach::trainer
