#include "operator/server/token_auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace coach::server {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(buf.str()));
  if (token.empty()) return absl::InvalidArgumentError(path + " is empty");
  return token;
}

absl::StatusOr<std::string> BearerToken(const std::string* authorization_header) {
  if (authorization_header == nullptr) {
    return absl::UnauthenticatedError("missing authorization metadata (Bearer token)");
  }
  constexpr char kPrefix[] = "Bearer ";
  if (!absl::StartsWithIgnoreCase(*authorization_header, kPrefix)) {
    return absl::UnauthenticatedError("authorization metadata is not a Bearer token");
  }
  std::string token = authorization_header->substr(sizeof(kPrefix) - 1);
  if (token.empty()) return absl::UnauthenticatedError("the Bearer token is empty");
  return token;
}

absl::Status TokenAuth::Check(const std::string* authorization_header) const {
  if (!enabled()) return absl::OkStatus();
  absl::StatusOr<std::string> presented = BearerToken(authorization_header);
  if (!presented.ok()) return presented.status();
  if (!ConstantTimeEquals(*presented, token_)) {
    return absl::UnauthenticatedError("invalid token");
  }
  return absl::OkStatus();
}

}  // namespace coach::server
