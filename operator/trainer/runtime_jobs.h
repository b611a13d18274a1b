#pragma once

// What the admission rules read of a runtime's replicated jobs, read once with every type
// checked (json_fields.h), so the rules themselves work on plain values.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::trainer {

struct RuntimeContainer {
  std::string name;
  std::vector<std::string> volume_mounts;
};

struct RuntimeJob {
  std::string name;
  // The JobSet default (1) when unset.
  int64_t replicas = 1;
  // Whether the Job template has labels at all, and its trainjob-ancestor-step label.
  bool has_labels = false;
  std::optional<std::string> ancestor;
  std::vector<RuntimeContainer> containers;
  std::vector<RuntimeContainer> init_containers;
  // The pod template's containers as held, for error values.
  nlohmann::json containers_json;

  bool HasContainer(const std::string& name) const;  // containers or initContainers
};

// spec.template.spec.replicatedJobs of a TrainingRuntime or ClusterTrainingRuntime; empty
// when unset.
absl::StatusOr<std::vector<RuntimeJob>> ReadRuntimeJobs(const nlohmann::json& runtime);

// The object's metadata.labels[key], "" when absent.
absl::StatusOr<std::string> Label(const nlohmann::json& object, const char* key);

// The object's metadata.name, "" when absent.
absl::StatusOr<std::string> ObjectName(const nlohmann::json& object);

}  // namespace coach::trainer
