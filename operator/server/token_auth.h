#pragma once

// Bearer-token authentication of API calls: metadata `authorization: Bearer <token>`.
// The token is compared in constant time and never logged or echoed.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coach::server {

// Equal strings, in time that depends only on the lengths' maximum, not on where they
// differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

// Reads a token file: its content with surrounding whitespace removed.
// Errors: NotFound / PermissionDenied (unreadable), InvalidArgument (empty).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The token of an `authorization: Bearer <token>` metadata value (nullptr: absent).
// Unauthenticated (missing, not Bearer, empty), with a message that never contains it.
absl::StatusOr<std::string> BearerToken(const std::string* authorization_header);

class TokenAuth {
 public:
  // An empty token disables the check.
  explicit TokenAuth(std::string token) : token_(std::move(token)) {}
  bool enabled() const { return !token_.empty(); }
  // `authorization_header`: the metadata value, or nullptr when absent.
  // Errors: Unauthenticated (missing, malformed or wrong), with a message that never
  // contains either token.
  absl::Status Check(const std::string* authorization_header) const;

 private:
  std::string token_;
};

}  // namespace coach::server
