#include "operator/trainer/semantic_equal.h"

namespace coach::trainer {
namespace {

using nlohmann::json;

bool IsEmpty(const json& v) {
  return v.is_null() || ((v.is_array() || v.is_object()) && v.empty());
}

}  // namespace

bool SemanticEqual(const json& a, const json& b) {
  if (IsEmpty(a) || IsEmpty(b)) return IsEmpty(a) && IsEmpty(b);
  if (a.is_object() && b.is_object()) {
    // Both walks are needed: a key present on one side only must be empty there.
    for (const auto& [k, v] : a.items()) {
      auto it = b.find(k);
      if (!SemanticEqual(v, it == b.end() ? json() : *it)) return false;
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k) && !IsEmpty(v)) return false;
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SemanticEqual(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

}  // namespace coach::trainer
