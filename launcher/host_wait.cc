#include "launcher/host_wait.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace coach::launcher {
namespace {

std::string Seconds(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(100)));
}

}  // namespace

std::string ResolveWithGetaddrinfo(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &addrs);
  if (rc == 0) {
    freeaddrinfo(addrs);
    return "";
  }
  return rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc);
}

absl::Status WaitForHosts(const std::vector<std::string>& hosts, const HostWaitOptions& options) {
  auto log = [&](const std::string& line) {
    if (options.log) {
      options.log(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  };
  auto resolve = options.resolve ? options.resolve : ResolveWithGetaddrinfo;
  auto now = [&options] { return options.clock->Now(); };
  auto sleep = options.sleep ? options.sleep : [](absl::Duration d) { absl::SleepFor(d); };

  const absl::Time start = now();
  const absl::Time deadline = start + options.timeout;
  absl::Time next_report = start + options.report_every;
  absl::Duration backoff = options.initial_backoff;
  struct Pending {
    std::string host;
    std::string why;
  };
  std::vector<Pending> pending;
  for (const std::string& h : hosts) pending.push_back({h, ""});
  for (bool first = true;; first = false) {
    for (auto it = pending.begin(); it != pending.end();) {
      it->why = resolve(it->host);
      if (it->why.empty()) {
        if (!first) {
          log(absl::StrCat("coach-launch: ", it->host, " resolves after ", Seconds(now() - start)));
        }
        it = pending.erase(it);
        continue;
      }
      if (first) {
        log(absl::StrCat("coach-launch: waiting for ", it->host, " to resolve: ", it->why));
      }
      ++it;
    }
    if (pending.empty()) return absl::OkStatus();
    const absl::Time t = now();
    std::vector<std::string> names;
    for (const Pending& p : pending) names.push_back(absl::StrCat(p.host, " (", p.why, ")"));
    if (t >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("host(s) not resolvable after ", Seconds(t - start), " (--peer-timeout ",
                       absl::FormatDuration(options.timeout), "): ", absl::StrJoin(names, ", ")));
    }
    if (t >= next_report) {
      log(absl::StrCat("coach-launch: waiting for ", absl::StrJoin(names, ", "), " to resolve, ",
                       Seconds(t - start), " so far"));
      next_report = t + options.report_every;
    }
    sleep(std::min(backoff, deadline - t));
    backoff = std::min(backoff * 2, options.max_backoff);
  }
}

}  // namespace coach::launcher
