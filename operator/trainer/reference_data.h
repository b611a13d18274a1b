#pragma once

// Test helper: upstream's shipped runtimes and example TrainJobs, read from the shared
// reference folder ($COACH_SHARED_DIR/reference/kubeflow-v2) as the API server would hold
// them (the TrainJob in namespace "default", the CRD defaults the merge reads filled in).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::trainer::testing {

// Every document of `relative` (a path under reference/kubeflow-v2), defaults applied.
absl::StatusOr<std::vector<nlohmann::json>> LoadReference(const std::string& relative);

// The one document of kind `kind` in `relative`.
absl::StatusOr<nlohmann::json> LoadReferenceKind(const std::string& relative,
                                                 const std::string& kind);

// The defaults upstream's CRDs give the fields the merge reads.
nlohmann::json WithDefaults(nlohmann::json object);

}  // namespace coach::trainer::testing
