#include "common/http/retry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace coach::http {

std::optional<absl::Duration> ParseRetryAfterSeconds(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  int64_t seconds = 0;
  if (value.empty() || !absl::SimpleAtoi(value, &seconds) || seconds < 0) return std::nullopt;
  return absl::Seconds(seconds);
}

std::optional<absl::Duration> ParseRetryAfter(absl::string_view value, absl::Time now) {
  value = absl::StripAsciiWhitespace(value);
  if (value.empty()) return std::nullopt;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(value, &seconds)) {
    if (seconds < 0) return std::nullopt;
    return absl::Seconds(seconds);
  }
  absl::Time when;
  std::string err;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", std::string(value), absl::UTCTimeZone(), &when,
                      &err)) {
    return std::max(absl::ZeroDuration(), when - now);
  }
  return std::nullopt;
}

absl::Duration ExponentialBackoff(absl::Duration initial, double multiplier, absl::Duration max,
                                  int retry) {
  const double factor = std::pow(multiplier, std::max(0, retry - 1));
  const absl::Duration backoff = initial * factor;
  if (backoff > max || backoff < absl::ZeroDuration()) return max;
  return backoff;
}

double UnitRandom() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace coach::http
