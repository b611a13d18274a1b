#pragma once

// Typed reads of admission input: a member present with the wrong JSON type is an
// InvalidArgument naming its path, so hostile objects are refused rather than thrown on.

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace coach::trainer {

// obj[key] when it is of type `want`; nullptr when `obj` lacks it or it is null. `obj` must be
// an object; `path` is the member's path for the error.
absl::StatusOr<const nlohmann::json*> Member(const nlohmann::json& obj, const char* key,
                                             nlohmann::json::value_t want, const std::string& path);

// Like Member for an object whose values must all be strings (labels, annotations).
absl::StatusOr<const nlohmann::json*> StringMap(const nlohmann::json& obj, const char* key,
                                                const std::string& path);

// The string at obj[key], "" when absent.
absl::StatusOr<std::string> StringMember(const nlohmann::json& obj, const char* key,
                                         const std::string& path);

// The list at obj[key] whose items are all objects; nullptr when absent.
absl::StatusOr<const nlohmann::json*> ObjectList(const nlohmann::json& obj, const char* key,
                                                 const std::string& path);

}  // namespace coach::trainer
