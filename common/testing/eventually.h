// Waiting in tests for something another thread or process makes true: the one polling helper
// every test uses, so that each waits the same way.

#pragma once

#include <functional>

#include "absl/time/time.h"

namespace coach::testing {

// Polls `pred` every `poll` until it holds or `timeout` (real time) passes; returns whether it
// held. `pred` is called at least once, and once more at the deadline, so a condition that
// became true during the last sleep still counts.
bool Eventually(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(20),
                absl::Duration poll = absl::Milliseconds(20));

}  // namespace coach::testing
