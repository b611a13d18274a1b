#pragma once

// The claims of a JSON Web Token, read without checking its signature: for what may only ever
// narrow what a token is good for (its audience, when to forget it), never to trust it.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace coach::server {

// The payload of `token` ("header.payload.signature", base64url) as a JSON object; a discarded
// json (is_discarded()) when `token` is not a JWT.
nlohmann::json JwtClaims(absl::string_view token);

// A claim that is a string or an array of strings, as a list (other values: none).
std::vector<std::string> JsonStrings(const nlohmann::json& value);

}  // namespace coach::server
