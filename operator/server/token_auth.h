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

// Shortest token a file may hold: a guessable token is no authentication.
inline constexpr size_t kMinTokenLength = 16;

// Reads a token file: its content with surrounding whitespace removed.
// Errors: NotFound (unreadable), InvalidArgument (empty, shorter than kMinTokenLength,
// holding whitespace or control characters inside, or readable or writable by every user:
// the message says which and how to fix it; it never contains the token). Group bits are
// allowed: Kubernetes mounts a Secret group-readable for the pod's fsGroup.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The local operator's own token at `path`: read when the file exists (it must be owned by
// this user and private to it, mode 0600 or stricter), else created with 256 random bits
// (hex) and mode 0600, atomically, so two operators starting at once agree on one token.
// Errors: InvalidArgument (a file another user owns or others may read, a bad token),
// Internal (cannot create it).
absl::StatusOr<std::string> EnsureOwnTokenFile(const std::string& path);

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
