#pragma once

// coach's one source of time. Production code reads the time only through a Clock it was
// handed (tools/suites/lint.sh refuses absl::Now(), std::chrono::*::now() and the like
// anywhere else), so a test can pass a FakeClock (common/testing/fake_clock.h) and move
// time by hand, and a deadline, an age or a rate never depends on which clock a file
// happened to read.
//
// Two readings: Now(), the wall clock, for points in time that are stored or compared with
// stored ones (a job's start, its deadline, a TTL); Monotonic(), for durations measured in this
// process (a backoff, how long a pass took), which must not jump when the wall clock is set.

#include "absl/time/time.h"

namespace coach {

class Clock {
 public:
  virtual ~Clock() = default;

  // The current wall-clock time. Thread-safe.
  virtual absl::Time Now() = 0;

  // Time elapsed since an arbitrary fixed point (the real clock: the system's boot): never
  // goes backwards and does not move when the wall clock is set (NTP, an administrator). For
  // durations within this process only: not comparable with Now() nor across processes.
  // Thread-safe.
  virtual absl::Duration Monotonic() = 0;

  // The process's real clock: what the binaries wire in, and the default of every options
  // struct that takes a Clock*. Never destroyed, so it may be used from any thread at any
  // time, static destructors included.
  static Clock* Real();
};

}  // namespace coach
