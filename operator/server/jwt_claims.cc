#include "operator/server/jwt_claims.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"

namespace coach::server {

using nlohmann::json;

json JwtClaims(absl::string_view token) {
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  if (parts.size() != 3 || parts[1].empty()) return json(json::value_t::discarded);
  std::string payload(parts[1]);
  payload.append((4 - payload.size() % 4) % 4, '=');
  std::string decoded;
  if (!absl::WebSafeBase64Unescape(payload, &decoded)) return json(json::value_t::discarded);
  json claims = json::parse(decoded, nullptr, false);
  return claims.is_object() ? claims : json(json::value_t::discarded);
}

std::vector<std::string> JsonStrings(const json& value) {
  std::vector<std::string> out;
  if (value.is_string()) out.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const json& v : value) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

}  // namespace coach::server
