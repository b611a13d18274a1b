#include "integrations/mlflow/rest_retry.h"

#include <algorithm>

#include "common/http/retry.h"

namespace coach::mlflow::internal {

bool IsRetryableHttpStatus(long s) {
  return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

absl::Duration BackoffDelay(const RetryPolicy& policy, int retry,
                            std::optional<absl::Duration> retry_after, double unit_random) {
  absl::Duration backoff = http::ExponentialBackoff(policy.initial_backoff, policy.multiplier,
                                                    policy.max_backoff, retry);
  backoff += policy.max_jitter * unit_random;
  if (retry_after.has_value()) {
    backoff = std::max(backoff, std::min(*retry_after, policy.max_backoff));
  }
  return backoff;
}

}  // namespace coach::mlflow::internal
