#include "operator/backend/kube/object_fields.h"

namespace coach::backend::kube {

using nlohmann::json;

const json& Field(const json& o, const char* key) {
  static const json kNull;
  if (!o.is_object()) return kNull;
  auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

std::string StringField(const json& o, const char* key) {
  const json& v = Field(o, key);
  return v.is_string() ? v.get<std::string>() : "";
}

bool Deleting(const json& object) {
  return !Field(Field(object, "metadata"), "deletionTimestamp").is_null();
}

absl::Time ParseTime(const std::string& s) {
  absl::Time t;
  std::string err;
  if (s.empty() || !absl::ParseTime(absl::RFC3339_full, s, &t, &err)) return absl::InfinitePast();
  return t;
}

}  // namespace coach::backend::kube
