#pragma once

// The tokens replica pods report progress with: projected ServiceAccount tokens of audience
// kProgressAudience (pod_token_auth.h). Every other API call refuses them (IsProgressToken), so
// that such a token is good for ReportProgress and nothing else, whatever --api-auth is.

#include "absl/strings/string_view.h"

namespace coach::server {

inline constexpr char kProgressAudience[] = "coach";

// True when `token` is a JWT every audience (aud) of which is kProgressAudience. Reads the
// claims without checking the signature: only ever used to refuse.
bool IsProgressToken(absl::string_view token);

}  // namespace coach::server
