#include "operator/server/progress_token.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/server/jwt_claims.h"

namespace coach::server {

bool IsProgressToken(absl::string_view token) {
  const nlohmann::json claims = JwtClaims(token);
  if (claims.is_discarded() || !claims.contains("aud")) return false;
  const std::vector<std::string> audiences = JsonStrings(claims["aud"]);
  return !audiences.empty() &&
         std::all_of(audiences.begin(), audiences.end(),
                     [](const std::string& a) { return a == kProgressAudience; });
}

}  // namespace coach::server
