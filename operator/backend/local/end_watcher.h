#pragma once

// Learns of replica ends as they happen: each started replica's end-of-file descriptor
// (ProcessRunner::TakeEndFd) is watched with epoll, and Wait returns the jobs whose
// replicas ended. The local backend's poller waits here between its periodic polls, so a
// replica's exit reaches the controller at once instead of up to a poll interval later
// (replicas adopted from an earlier operator process have no descriptor: the periodic poll
// still finds their end).
//
// Thread-safe: Watch from any thread (the starters), Wait from one (the poller), Wake from any.

#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

class EndWatcher {
 public:
  // Errors: Internal (epoll or eventfd could not be made).
  static absl::StatusOr<std::unique_ptr<EndWatcher>> Create();
  ~EndWatcher();  // closes every descriptor still watched
  EndWatcher(const EndWatcher&) = delete;
  EndWatcher& operator=(const EndWatcher&) = delete;

  // Takes `fd` (closed here in every case); `job` is returned by Wait once it reads end of
  // file or fails. Errors: Internal (epoll_ctl); the caller then relies on polling.
  absl::Status Watch(int fd, const store::JobKey& job);
  // Blocks until a watched descriptor ended, Wake was called, or `timeout` passed; returns
  // the jobs of the descriptors that ended (each descriptor once, then closed), in no order.
  std::vector<store::JobKey> Wait(absl::Duration timeout);
  // Makes the current or next Wait return.
  void Wake();
  // Descriptors watched now.
  size_t Watched();

 private:
  EndWatcher(int epoll_fd, int wake_fd) : epoll_fd_(epoll_fd), wake_fd_(wake_fd) {}

  const int epoll_fd_;
  const int wake_fd_;
  absl::Mutex mu_;
  std::map<int, store::JobKey> jobs_ ABSL_GUARDED_BY(mu_);  // fd -> its replica's job
};

}  // namespace coach::backend::local
