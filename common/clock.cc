#include "common/clock.h"

#include <time.h>

#include "absl/time/clock.h"

namespace coach {
namespace {

// The only place in coach's production code that reads the system's time (both clocks).
class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  absl::Duration Monotonic() override {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  // cannot fail with this clock id and a valid pointer
    return absl::DurationFromTimespec(ts);
  }
};

}  // namespace

Clock* Clock::Real() {
  static Clock* const real = new RealClock();  // leaked on purpose: usable during exit
  return real;
}

}  // namespace coach
