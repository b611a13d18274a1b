#include "operator/backend/local/replica_poller.h"

#include <utility>

#include "common/clock.h"

namespace coach::backend::local {

ReplicaPoller::ReplicaPoller(EndWatcher* ends, absl::Duration interval, PollFn poll, WakeFn wake)
    : ends_(ends), interval_(interval), poll_(std::move(poll)), wake_(std::move(wake)) {}

ReplicaPoller::~ReplicaPoller() { Stop(); }

void ReplicaPoller::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void ReplicaPoller::Stop() {
  std::thread t;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    t = std::move(thread_);
  }
  ends_->Wake();
  if (t.joinable()) t.join();
}

void ReplicaPoller::Loop() {
  // Wall time, like the waits themselves (epoll): the cadence of polling is not logic time,
  // and an injected test clock that stands still must not stop the polls.
  Clock* const wall = Clock::Real();
  absl::Time next_poll = wall->Now() + interval_;
  for (;;) {
    std::set<store::JobKey> changed;
    for (store::JobKey& job : ends_->Wait(next_poll - wall->Now())) changed.insert(std::move(job));
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (wall->Now() >= next_poll) {
      next_poll = wall->Now() + interval_;
      changed.merge(poll_());
    }
    if (!changed.empty()) wake_(changed);
  }
}

}  // namespace coach::backend::local
