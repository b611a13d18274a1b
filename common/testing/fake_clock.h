#pragma once

// A Clock that moves only when the test says so. Thread-safe. Code that waits for a
// deadline by sleeping in real time (polling loops) still sleeps in real time: give such
// code a FakeClock only when the test moves it past the deadline itself.
//
// Its monotonic reading moves with the wall time (Advance, Set forwards) and never back: Set
// to an earlier time moves only the wall clock, as when a real one is set back.

#include <algorithm>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach {

class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  absl::Duration Monotonic() override {
    absl::MutexLock lock(&mu_);
    return monotonic_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
    monotonic_ += std::max(d, absl::ZeroDuration());
  }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    monotonic_ += std::max(t - now_, absl::ZeroDuration());
    now_ = t;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  // Since an arbitrary point, as the real clock's: a day, so a test never sees zero.
  absl::Duration monotonic_ ABSL_GUARDED_BY(mu_) = absl::Hours(24);
};

}  // namespace coach
