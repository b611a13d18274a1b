#pragma once

// What the REST client may say when a request fails: MLflow's answers mapped to absl codes, and
// the tracking URI with its secrets removed (statuses and logs never carry a password).

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace coach::mlflow::internal {

// The absl status for an HTTP response (2xx: OK). `body` may be MLflow's JSON error or plain text.
// 408, 429 and 5xx: Unavailable; 401 Unauthenticated; 403 PermissionDenied; then MLflow's
// error_code (RESOURCE_DOES_NOT_EXIST NotFound, RESOURCE_ALREADY_EXISTS/RESOURCE_CONFLICT
// AlreadyExists, INVALID_PARAMETER_VALUE/BAD_REQUEST/MALFORMED_REQUEST InvalidArgument ...);
// then 400 InvalidArgument, 404 NotFound, 409 AlreadyExists, anything else FailedPrecondition.
absl::Status MapHttpError(long http_status, absl::string_view body, absl::string_view what);

// The tracking URI with any user:password@ removed.
std::string RedactUri(absl::string_view uri);

}  // namespace coach::mlflow::internal
