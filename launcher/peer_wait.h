#pragma once

// Waits until the peers a pod depends on are up: a real readiness check instead of
// upstream's `nslookup` loop. Each address is resolved with getaddrinfo and, when
// `connect` is set, must accept a TCP connection (which is closed at once).

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "launcher/launch_config.h"

namespace coach::launcher {

struct PeerWaitOptions {
  absl::Duration timeout = absl::Seconds(300);  // overall, for all peers together
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);  // doubles up to this between attempts
  std::function<void(const std::string&)> log;    // progress lines; default stderr
  Clock* clock = Clock::Real();                   // not owned
};

// Returns OK once every peer is reachable, in order.
// Errors: DeadlineExceeded naming the first unreachable peer ("host:port (from SOURCE)"),
// how long was waited and the last failure (getaddrinfo's message, or connect's errno text).
absl::Status WaitForPeers(const std::vector<PeerAddress>& peers, const PeerWaitOptions& options);

}  // namespace coach::launcher
