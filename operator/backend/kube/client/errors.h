#pragma once

// HTTP responses of the API server -> absl::Status. This is the only place where HTTP codes
// become status codes; everything above the KubeClient sees only absl codes.
//
//   400, 422 (BadRequest, Invalid)    -> InvalidArgument; the message ends with the causes'
//                                        field names: "... [fields: spec.containers[0].image]"
//   401                               -> Unauthenticated
//   403                               -> PermissionDenied
//   404                               -> NotFound
//   409 with reason AlreadyExists     -> AlreadyExists
//   409 otherwise (Conflict)          -> Aborted (stale resourceVersion, failed precondition):
//                                        re-read and retry (RetryOnConflict)
//   410 Gone / ERROR event code 410   -> OutOfRange with the Gone payload (IsGone): the
//                                        resourceVersion is too old, re-list
//   429, 5xx, connection errors       -> Unavailable (RetryAfter() carries Retry-After)
//   other 4xx                         -> FailedPrecondition (405, 406, 415: a client bug)
//
// Every mapped status carries the payload kHttpPayloadUrl = "<code> <reason>" so callers and
// logs can see what the server said; the message is "<METHOD> <path>: <server message>".

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace coach::kubeclient {

inline constexpr char kGonePayloadUrl[] = "type.coach.dev/kube.Gone";
inline constexpr char kHttpPayloadUrl[] = "type.coach.dev/kube.Http";
inline constexpr char kRetryAfterPayloadUrl[] = "type.coach.dev/kube.RetryAfter";

// OutOfRange marked as Gone.
absl::Status GoneError(absl::string_view message);
// True for statuses made by GoneError (the watch or list resourceVersion is too old).
bool IsGone(const absl::Status& status);

// The server's Retry-After (seconds), when an Unavailable status carried one.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);
absl::Status WithRetryAfter(absl::Status status, absl::Duration after);

// The HTTP status code a mapped status came from (0 when none).
int HttpCode(const absl::Status& status);

// Maps an HTTP error response. `body` may be a metav1.Status JSON object (reason, message,
// details.causes[].field) or anything else (used verbatim, truncated). `context` prefixes
// the message ("GET /api/v1/..."). `retry_after` is the parsed header (nullopt when absent).
absl::Status StatusFromHttp(long http_code, absl::string_view body, absl::string_view context,
                            std::optional<absl::Duration> retry_after = std::nullopt);

// Maps a metav1.Status object (from a watch ERROR event): uses its "code" and "reason".
absl::Status StatusFromStatusObject(const nlohmann::json& status, absl::string_view context);

}  // namespace coach::kubeclient
