#pragma once

// DNS-wait mode (`coach-launch --wait-for-host HOST ...`): waits until every HOST resolves,
// for an init container that holds a pod back until its peers' Services exist in DNS
// (upstream runs a busybox `nslookup` loop for this). Resolution only: no connection is tried.
//
// Each round asks about every host not yet resolved; a host that resolved once is done. The
// rounds are 50 ms apart at first, doubling up to 1 s. Progress goes to `log`: one
// "waiting for HOST to resolve" line per host when the wait begins, then one line naming the
// hosts still waited for at most every `report_every`, and one line per host when it resolves
// after a wait. Time and resolution are injected, so the policy is tested without a clock.

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::launcher {

struct HostWaitOptions {
  absl::Duration timeout = absl::Seconds(300);  // for all hosts together
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  absl::Duration report_every = absl::Seconds(5);
  std::function<void(const std::string&)> log;  // default: a line on stderr
  // Empty when `host` resolves, else why not. Default: getaddrinfo. One call may take as long
  // as the system resolver's own timeout (resolv.conf), so the wait can overrun by that much.
  std::function<std::string(const std::string& host)> resolve;
  Clock* clock = Clock::Real();               // not owned
  std::function<void(absl::Duration)> sleep;  // default: absl::SleepFor
};

// OK once every host resolves. Errors: DeadlineExceeded naming every host that did not
// resolve within `timeout`, with the resolver's last answer for each.
absl::Status WaitForHosts(const std::vector<std::string>& hosts, const HostWaitOptions& options);

// getaddrinfo(host): empty when it resolves, else the resolver's message.
std::string ResolveWithGetaddrinfo(const std::string& host);

}  // namespace coach::launcher
