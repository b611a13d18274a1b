#pragma once

// The controller's only source of time. The logic never calls absl::Now(); tests inject
// a FakeClock (operator/core/testing/fake_clock.h) and move time by hand.

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace coach::core {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
};

class RealClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace coach::core
