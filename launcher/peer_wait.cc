#include "launcher/peer_wait.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace coach::launcher {
namespace {

// One attempt bounded by `budget`. Empty string on success, else why it failed.
std::string TryPeer(const PeerAddress& peer, absl::Duration budget) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  const std::string port = std::to_string(peer.port);
  int rc = getaddrinfo(peer.host.c_str(), port.c_str(), &hints, &addrs);
  if (rc != 0) {
    return absl::StrCat("getaddrinfo: ",
                        rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc));
  }
  if (!peer.connect) {
    freeaddrinfo(addrs);
    return "";
  }
  std::string last = "connect: no address";
  for (addrinfo* a = addrs; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = absl::StrCat("socket: ", std::strerror(errno), " (errno ", errno, ")");
      continue;
    }
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        const int ms = static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(budget)));
        int n = poll(&p, 1, ms);
        if (n == 0) {
          err = ETIMEDOUT;
        } else if (n < 0) {
          err = errno;
        } else {
          socklen_t len = sizeof(err);
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    close(fd);
    if (err == 0) {
      freeaddrinfo(addrs);
      return "";
    }
    last = absl::StrCat("connect: ", std::strerror(err), " (errno ", err, ")");
  }
  freeaddrinfo(addrs);
  return last;
}

std::string Describe(const PeerAddress& peer) {
  return absl::StrCat(peer.host, ":", peer.port, " (from ", peer.source, ")");
}

}  // namespace

absl::Status WaitForPeers(const std::vector<PeerAddress>& peers, const PeerWaitOptions& options) {
  auto log = [&](const std::string& line) {
    if (options.log) {
      options.log(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  };
  const absl::Time start = options.clock->Now();
  const absl::Time deadline = start + options.timeout;
  for (const PeerAddress& peer : peers) {
    absl::Duration backoff = options.initial_backoff;
    bool announced = false;
    for (;;) {
      const absl::Duration left = deadline - options.clock->Now();
      // Cap one connect attempt so a black-holed SYN cannot eat the whole budget.
      const std::string why =
          TryPeer(peer, std::min(std::max(left, absl::Milliseconds(1)), absl::Seconds(5)));
      if (why.empty()) {
        if (announced) {
          log(absl::StrCat("coach-launch: ", Describe(peer), " is ",
                           peer.connect ? "accepting connections" : "resolvable", " after ",
                           absl::FormatDuration(
                               absl::Trunc(options.clock->Now() - start, absl::Milliseconds(1)))));
        }
        break;
      }
      if (!announced) {
        log(absl::StrCat("coach-launch: waiting for ", Describe(peer), ": ", why));
        announced = true;
      }
      const absl::Duration remaining = deadline - options.clock->Now();
      if (remaining <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(absl::StrCat(
            "peer ", Describe(peer), " not ", peer.connect ? "accepting connections" : "resolvable",
            " after ",
            absl::FormatDuration(absl::Trunc(options.clock->Now() - start, absl::Milliseconds(1))),
            " (--peer-timeout ", absl::FormatDuration(options.timeout), "); last error: ", why));
      }
      absl::SleepFor(std::min(backoff, remaining));
      backoff = std::min(backoff * 2, options.max_backoff);
    }
  }
  return absl::OkStatus();
}

}  // namespace coach::launcher
