#pragma once

// Retry arithmetic the REST clients share. Which answers are worth a retry, and how many, stays
// with each client (the Kubernetes and MLflow servers differ); the Retry-After header and the
// exponential growth of the wait are the same everywhere.

#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace coach::http {

// A Retry-After value given as delta-seconds ("3"); nullopt when absent, negative or not a number
// (an HTTP-date too).
std::optional<absl::Duration> ParseRetryAfterSeconds(absl::string_view value);

// A Retry-After value as delta-seconds or as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT",
// counted from `now`, never negative); nullopt when absent or unparsable.
std::optional<absl::Duration> ParseRetryAfter(absl::string_view value, absl::Time now);

// The wait before retry number `retry` (1-based) before jitter:
// min(max, initial * multiplier^(retry-1)), max also when the product overflows.
absl::Duration ExponentialBackoff(absl::Duration initial, double multiplier, absl::Duration max,
                                  int retry);

// A uniform draw in [0, 1) for jitter (thread-safe; one generator per thread).
double UnitRandom();

}  // namespace coach::http
