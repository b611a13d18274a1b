#include "operator/trainer/json_fields.h"

#include "absl/strings/str_cat.h"

namespace coach::trainer {

using nlohmann::json;

namespace {

const char* TypeName(json::value_t t) {
  switch (t) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "a list";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    default:
      return "a number";
  }
}

bool Matches(const json& v, json::value_t want) {
  switch (want) {
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return v.is_number_integer();
    case json::value_t::number_float:
      return v.is_number();
    default:
      return v.type() == want;
  }
}

}  // namespace

absl::StatusOr<const json*> Member(const json& obj, const char* key, json::value_t want,
                                   const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  if (!Matches(*it, want)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": must be ", TypeName(want)));
  }
  return &*it;
}

absl::StatusOr<const json*> StringMap(const json& obj, const char* key, const std::string& path) {
  absl::StatusOr<const json*> map = Member(obj, key, json::value_t::object, path);
  if (!map.ok() || *map == nullptr) return map;
  for (const auto& [k, v] : (*map)->items()) {
    if (!v.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, "[", k, "]: must be a string"));
    }
  }
  return map;
}

absl::StatusOr<std::string> StringMember(const json& obj, const char* key,
                                         const std::string& path) {
  absl::StatusOr<const json*> s = Member(obj, key, json::value_t::string, path);
  if (!s.ok()) return s.status();
  return *s == nullptr ? std::string() : (*s)->get<std::string>();
}

absl::StatusOr<const json*> ObjectList(const json& obj, const char* key, const std::string& path) {
  absl::StatusOr<const json*> list = Member(obj, key, json::value_t::array, path);
  if (!list.ok() || *list == nullptr) return list;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    if (!(**list)[i].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path, "[", i, "]: must be an object"));
    }
  }
  return list;
}

}  // namespace coach::trainer
