#include "operator/backend/kube/client/rate_limiter.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace coach::kubeclient {

TokenBucketRateLimiter::TokenBucketRateLimiter(double qps, int burst, Clock* clock)
    : clock_(clock),
      qps_(qps),
      burst_(std::max(1, burst)),
      tokens_(std::max(1, burst)),
      last_(clock->Now()) {}

void TokenBucketRateLimiter::Refill(absl::Time now) {
  if (now > last_) {
    tokens_ = std::min<double>(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
}

absl::Time TokenBucketRateLimiter::Reserve(absl::Time now) {
  Refill(now);
  tokens_ -= 1.0;  // may go negative: later callers queue behind this reservation
  if (tokens_ >= 0) return now;
  return now + absl::Seconds(-tokens_ / qps_);
}

bool TokenBucketRateLimiter::Wait(absl::Time deadline, const std::atomic<bool>* stop) {
  if (qps_ <= 0 || lifted_.load()) return true;
  absl::Time ready;
  {
    absl::MutexLock lock(&mu_);
    absl::Time now = clock_->Now();
    Refill(now);
    double need = tokens_ >= 1.0 ? 0.0 : (1.0 - tokens_) / qps_;
    if (now + absl::Seconds(need) > deadline) return false;
    ready = Reserve(now);
  }
  while (true) {
    absl::Time now = clock_->Now();
    if (now >= ready || lifted_.load()) return true;
    if (stop != nullptr && stop->load()) {
      absl::MutexLock lock(&mu_);
      tokens_ += 1.0;  // give the reservation back
      return false;
    }
    absl::SleepFor(std::min(ready - now, absl::Milliseconds(50)));
  }
}

bool TokenBucketRateLimiter::TryAccept() {
  if (qps_ <= 0 || lifted_.load()) return true;
  absl::MutexLock lock(&mu_);
  Refill(clock_->Now());
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

}  // namespace coach::kubeclient
