#pragma once

// Reads the fields of one JSON object into protobuf setters, collecting every problem as
// a FieldError (`path: message`) instead of stopping at the first. A field whose value is
// null counts as absent, as in Kubernetes.

#include <google/protobuf/map.h>
#include <google/protobuf/timestamp.pb.h>
#include <google/protobuf/util/time_util.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/field_error.h"

namespace coach::api::v1::codec {

// "path.key", or "key" at the top.
std::string Join(const std::string& path, const std::string& key);

// What a value is, for "must be X, got Y" messages: `string "x"`, `integer 3`, `a list`.
// Strings longer than 64 characters are cut.
std::string Describe(const nlohmann::json& v);

class FieldDecoder {
 public:
  using json = nlohmann::json;
  using Timestamp = google::protobuf::Timestamp;

  std::vector<FieldError> errors;

  void Error(const std::string& path, std::string message) {
    errors.push_back({path, std::move(message)});
  }

  void Expected(const std::string& path, const char* what, const json& got) {
    Error(path, absl::StrCat("must be ", what, ", got ", Describe(got)));
  }

  // nullptr (with an error unless the value is null) when `v` is not an object.
  const json* Object(const json& v, const std::string& path) {
    if (v.is_object()) return &v;
    if (!v.is_null()) Expected(path, "an object", v);
    return nullptr;
  }

  // Calls each(item, item_path) for every element of the list `v` at `path` that is an object
  // ("path[i]"); an error for `v` when it is not a list and for each element that is not an
  // object.
  template <typename Each>
  void ObjectList(const json& v, const std::string& path, Each each) {
    if (!v.is_array()) {
      Expected(path, "a list", v);
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string item_path = absl::StrCat(path, "[", i, "]");
      if (v[i].is_object()) {
        each(v[i], item_path);
      } else {
        Expected(item_path, "an object", v[i]);
      }
    }
  }

  // Errors for keys of `object` outside `known`.
  void Unknown(const json& object, const std::string& path, const std::set<std::string>& known) {
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (known.count(it.key()) == 0) Error(Join(path, it.key()), "unknown field");
    }
  }

  template <typename Int>
  bool Integer(const json& v, const std::string& path, Int* out) {
    if (v.is_number_integer()) {
      bool fits;
      if (v.is_number_unsigned()) {
        fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
      } else {
        int64_t i = v.get<int64_t>();
        fits = i >= std::numeric_limits<Int>::min() && i <= std::numeric_limits<Int>::max();
      }
      if (fits) {
        *out = v.is_number_unsigned() ? static_cast<Int>(v.get<uint64_t>())
                                      : static_cast<Int>(v.get<int64_t>());
        return true;
      }
      Error(path, absl::StrCat("must be an integer in [", std::numeric_limits<Int>::min(), ", ",
                               std::numeric_limits<Int>::max(), "], got ", v.dump()));
      return false;
    }
    Expected(path, "an integer", v);
    return false;
  }

  // Calls `set` with the field's value when `key` is present and not null.
  template <typename Set>
  void Int32(const json& object, const std::string& key, const std::string& path, Set set) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    int32_t value;
    if (Integer(*it, Join(path, key), &value)) set(value);
  }

  template <typename Set>
  void Int64(const json& object, const std::string& key, const std::string& path, Set set) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    int64_t value;
    if (Integer(*it, Join(path, key), &value)) set(value);
  }

  template <typename Set>
  void String(const json& object, const std::string& key, const std::string& path, Set set,
              const char* what = "a string") {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    if (it->is_string()) {
      set(it->get<std::string>());
    } else {
      Expected(Join(path, key), what, *it);
    }
  }

  template <typename Set>
  void Bool(const json& object, const std::string& key, const std::string& path, Set set) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    if (it->is_boolean()) {
      set(it->get<bool>());
    } else {
      Expected(Join(path, key), "a boolean (true or false)", *it);
    }
  }

  void Time(const json& object, const std::string& key, const std::string& path,
            Timestamp* (*mutable_field)(void*), void* owner) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return;
    Timestamp ts;
    if (!it->is_string() ||
        !google::protobuf::util::TimeUtil::FromString(it->get<std::string>(), &ts)) {
      Expected(Join(path, key), "an RFC 3339 timestamp like \"2024-05-01T12:00:00Z\"", *it);
      return;
    }
    *mutable_field(owner) = ts;
  }

  // map<string, string> fields (labels, annotations).
  void StringMap(const json& object, const std::string& key, const std::string& path,
                 google::protobuf::Map<std::string, std::string>* out) {
    auto it = object.find(key);
    if (it == object.end()) return;
    const json* map = Object(*it, Join(path, key));
    if (map == nullptr) return;
    for (auto entry = map->begin(); entry != map->end(); ++entry) {
      if (entry->is_string()) {
        (*out)[entry.key()] = entry->get<std::string>();
      } else {
        Expected(absl::StrCat(Join(path, key), "[", entry.key(), "]"), "a string", *entry);
      }
    }
  }
};

// Decodes the RFC 3339 time field `key` of `object` into `msg->mutable_<field>()`, `msg`
// being a `Type*`.
#define COACH_TIME_FIELD(decoder, object, key, path, msg, Type, field) \
  (decoder).Time((object), (key), (path),                              \
                 [](void* o) { return static_cast<Type*>(o)->mutable_##field(); }, (msg))

}  // namespace coach::api::v1::codec
