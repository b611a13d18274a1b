#pragma once

// A token bucket shared by every request of a client, as client-go's flowcontrol:
// `qps` tokens per second refill a bucket of `burst` tokens (which starts full); each
// request takes one, waiting when the bucket is empty. qps <= 0 disables limiting, and so does
// Lift(): a client that learns the API server enforces API Priority and Fairness lifts its
// fallback limit (see RestKubeClientOptions::lift_limit_on_apf).
//
// Time comes from the injected Clock; waits sleep in real time, polling that clock every 50 ms
// at most, so a FakeClock that a test advances releases a waiter within one poll.

#include <atomic>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::kubeclient {

inline constexpr double kDefaultQps = 20.0;  // --kube-api-qps, as upstream's operator default
inline constexpr int kDefaultBurst = 30;     // --kube-api-burst

class TokenBucketRateLimiter {
 public:
  TokenBucketRateLimiter(double qps, int burst, Clock* clock = Clock::Real());

  // Takes a token, sleeping until one is available. Returns false (without a token) when
  // `stop` is raised or when the wait would pass `deadline`.
  bool Wait(absl::Time deadline = absl::InfiniteFuture(), const std::atomic<bool>* stop = nullptr);
  // Takes a token only if one is available now.
  bool TryAccept();

  // From now on every Wait/TryAccept succeeds at once. Idempotent; returns true the first time.
  bool Lift() { return !lifted_.exchange(true); }
  bool lifted() const { return lifted_.load(); }

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  // Reserves a token; returns when it becomes usable (now or later).
  absl::Time Reserve(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Refill(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock* const clock_;
  const double qps_;
  const int burst_;
  std::atomic<bool> lifted_{false};
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::kubeclient
