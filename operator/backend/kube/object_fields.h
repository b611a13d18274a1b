#pragma once

// Readers of a Kubernetes object's JSON for the kube backend's caches: a missing or mistyped
// field reads as empty (null, "", no label), never as an error, because cached objects are
// trimmed and an object of another writer may lack what coach's objects carry.

#include <nlohmann/json.hpp>
#include <string>

#include "absl/time/time.h"

namespace coach::backend::kube {

// o[key], or null when `o` is not an object or lacks `key`.
const nlohmann::json& Field(const nlohmann::json& o, const char* key);
// o[key] when it is a string, else "".
std::string StringField(const nlohmann::json& o, const char* key);
// True when metadata.deletionTimestamp is set.
bool Deleting(const nlohmann::json& object);
// An RFC 3339 timestamp; InfinitePast when empty or malformed.
absl::Time ParseTime(const std::string& s);

}  // namespace coach::backend::kube
