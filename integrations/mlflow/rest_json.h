#pragma once

// MLflow's REST answers read into tracking_client.h's types. Readers are lenient as the Python
// client is: a missing or mistyped field reads as its zero value.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "integrations/mlflow/tracking_client.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow::internal {

// The body as JSON; Unavailable when it is not (a proxy's error page, a cut answer).
absl::StatusOr<nlohmann::json> ParseJson(const std::string& body, absl::string_view what);

// A field as an integer (numbers and numeric strings, as MLflow sends int64 both ways).
int64_t Int64Field(const nlohmann::json& j, const char* name, int64_t fallback = 0);
std::string StringField(const nlohmann::json& j, const char* name);

Metric ParseMetric(const nlohmann::json& j);
RunInfo ParseRunInfo(const nlohmann::json& j);
Run ParseRun(const nlohmann::json& j);

nlohmann::json TagsJson(const std::vector<Tag>& tags);

}  // namespace coach::mlflow::internal
