#pragma once

// coach's one source of time. Production code reads the time only through a Clock it was
// handed (tools/suites/lint.sh refuses absl::Now(), std::chrono::*::now() and the like
// anywhere else), so a test can pass a FakeClock (common/testing/fake_clock.h) and move
// time by hand, and a deadline, an age or a rate never depends on which clock a file
// happened to read.

#include "absl/time/time.h"

namespace coach {

class Clock {
 public:
  virtual ~Clock() = default;

  // The current wall-clock time. Thread-safe.
  virtual absl::Time Now() = 0;

  // The process's real clock: what the binaries wire in, and the default of every options
  // struct that takes a Clock*. Never destroyed, so it may be used from any thread at any
  // time, static destructors included.
  static Clock* Real();
};

}  // namespace coach
