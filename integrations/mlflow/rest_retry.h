#pragma once

// When the REST client retries and how long it waits: MLflow's retryable statuses (as its Python
// client's) and the backoff of a RetryPolicy, on common/http's retry arithmetic.

#include <optional>

#include "absl/time/time.h"
#include "integrations/mlflow/rest_options.h"

namespace coach::mlflow::internal {

// 408, 429, 500, 502, 503, 504.
bool IsRetryableHttpStatus(long http_status);

// The wait before retry number `retry` (1-based): min(max_backoff, initial * multiplier^(retry-1))
// plus jitter in [0, max_jitter) drawn from `unit_random` in [0,1); at least `retry_after` when set
// (itself capped at max_backoff).
absl::Duration BackoffDelay(const RetryPolicy& policy, int retry,
                            std::optional<absl::Duration> retry_after, double unit_random);

}  // namespace coach::mlflow::internal
