#include "operator/backend/local/end_watcher.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace coach::backend::local {

absl::StatusOr<std::unique_ptr<EndWatcher>> EndWatcher::Create() {
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::InternalError(absl::StrCat("epoll_create1: ", strerror(errno)));
  const int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int e = errno;
    close(epoll_fd);
    return absl::InternalError(absl::StrCat("eventfd: ", strerror(e)));
  }
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, wake_fd, &ev) != 0) {
    const int e = errno;
    close(wake_fd);
    close(epoll_fd);
    return absl::InternalError(absl::StrCat("epoll_ctl: ", strerror(e)));
  }
  return std::unique_ptr<EndWatcher>(new EndWatcher(epoll_fd, wake_fd));
}

EndWatcher::~EndWatcher() {
  absl::MutexLock lock(&mu_);
  for (const auto& [fd, job] : jobs_) close(fd);
  close(wake_fd_);
  close(epoll_fd_);
}

absl::Status EndWatcher::Watch(int fd, const store::JobKey& job) {
  absl::MutexLock lock(&mu_);
  struct epoll_event ev = {};
  // Level-triggered: a descriptor whose shim already ended is reported by the next Wait.
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    const int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("epoll_ctl ADD: ", strerror(e)));
  }
  jobs_[fd] = job;
  return absl::OkStatus();
}

std::vector<store::JobKey> EndWatcher::Wait(absl::Duration timeout) {
  std::array<struct epoll_event, 64> events;
  const int64_t ms =
      std::clamp<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(
                              std::max(timeout, absl::ZeroDuration()), absl::Milliseconds(1))),
                          0, INT_MAX);
  const int n =
      epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), static_cast<int>(ms));
  std::vector<store::JobKey> ended;
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == wake_fd_) {
      uint64_t count;
      (void)!read(wake_fd_, &count, sizeof(count));
      continue;
    }
    // The shim writes nothing after its start line: anything readable is its end (EOF),
    // and so is an error. Drain to be sure it is the end.
    char buf[256];
    const ssize_t got = read(fd, buf, sizeof(buf));
    if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR))) continue;
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(fd);
    if (it == jobs_.end()) continue;
    ended.push_back(it->second);
    jobs_.erase(it);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
  }
  return ended;
}

void EndWatcher::Wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

size_t EndWatcher::Watched() {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

}  // namespace coach::backend::local
