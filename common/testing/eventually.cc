#include "common/testing/eventually.h"

#include "absl/time/clock.h"

namespace coach::testing {

bool Eventually(const std::function<bool()>& pred, absl::Duration timeout, absl::Duration poll) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(poll);
  }
  return pred();
}

}  // namespace coach::testing
