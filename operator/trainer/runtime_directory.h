#pragma once

// Training runtimes kept as YAML files in a directory (the local backend's
// --training-runtimes): upstream's shipped runtimes, or a team's, read as `kubectl apply -f DIR
// -R` would read them, so that a TrainJob names a runtime on this machine as it does on a cluster.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace coach::trainer {

// The largest file read (a runtime is a few KB; upstream's biggest is under 10 KB).
inline constexpr size_t kMaxRuntimeFileBytes = 1 << 20;

// The runtime of kind `kind` ("ClusterTrainingRuntime" or "TrainingRuntime") called `name`
// (a TrainingRuntime also in `namespace_`: its metadata.namespace, "default" when it has none)
// among every *.yaml / *.yml file under `dir`, in path order, the first match; nullopt when none
// matches. Files that are not YAML, larger than kMaxRuntimeFileBytes, or hold other kinds are
// skipped. Errors: NotFound when `dir` is not a directory.
absl::StatusOr<std::optional<nlohmann::json>> FindRuntimeInDirectory(const std::string& dir,
                                                                     const std::string& kind,
                                                                     const std::string& namespace_,
                                                                     const std::string& name);

}  // namespace coach::trainer
