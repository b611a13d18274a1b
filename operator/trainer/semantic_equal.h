#pragma once

// apimachinery's equality.Semantic.DeepEqual on the JSON of a typed object: a field that is
// absent, null, an empty list or an empty map compares equal to any other of those.

#include <nlohmann/json.hpp>

namespace coach::trainer {

bool SemanticEqual(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace coach::trainer
