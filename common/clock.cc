#include "common/clock.h"

#include "absl/time/clock.h"

namespace coach {
namespace {

// The only place in coach's production code that reads the system's time.
class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace

Clock* Clock::Real() {
  static Clock* const real = new RealClock();  // leaked on purpose: usable during exit
  return real;
}

}  // namespace coach
