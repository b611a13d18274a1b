#include "operator/core/work_queue.h"

#include <algorithm>
#include <utility>

namespace coach::core {

WorkQueue::WorkQueue(Clock* clock, Options options)
    : clock_(clock), options_(options), timer_([this] { TimerLoop(); }) {}

WorkQueue::~WorkQueue() {
  ShutDown();
  if (timer_.joinable()) timer_.join();
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_ || dirty_.count(key) > 0) return;
  dirty_.insert(key);
  // A key being processed is queued again by Done().
  if (processing_.count(key) > 0) return;
  queue_.push_back(key);
  work_cv_.Signal();
}

void WorkQueue::AddAt(const std::string& key, absl::Time at) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  if (at <= clock_->Now()) {
    AddLocked(key);
    return;
  }
  auto it = delayed_.find(key);
  if (it == delayed_.end()) {
    delayed_.emplace(key, at);
  } else {
    it->second = std::min(it->second, at);
  }
  timer_cv_.Signal();
}

absl::Duration WorkQueue::BackoffFor(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  const int failures = it == failures_.end() ? 0 : it->second;
  absl::Duration d = options_.backoff_base;
  for (int i = 0; i < failures && d < options_.backoff_cap; ++i) d *= 2;
  return std::min(d, options_.backoff_cap);
}

absl::Duration WorkQueue::AddRateLimited(const std::string& key) {
  const absl::Duration delay = BackoffFor(key);
  {
    absl::MutexLock lock(&mu_);
    ++failures_[key];
  }
  AddAt(key, clock_->Now() + delay);
  return delay;
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  while (queue_.empty() && !shutdown_) work_cv_.Wait(&mu_);
  if (shutdown_) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.count(key) > 0 && !shutdown_) {
    queue_.push_back(key);
    work_cv_.Signal();
  }
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  work_cv_.SignalAll();
  timer_cv_.SignalAll();
}

bool WorkQueue::shutting_down() const {
  absl::MutexLock lock(&mu_);
  return shutdown_;
}

size_t WorkQueue::Depth() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

size_t WorkQueue::DelayedCount() const {
  absl::MutexLock lock(&mu_);
  return delayed_.size();
}

void WorkQueue::PromoteDueLocked(absl::Time now) {
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second <= now) {
      AddLocked(it->first);
      it = delayed_.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkQueue::TimerLoop() {
  absl::MutexLock lock(&mu_);
  while (!shutdown_) {
    const absl::Time now = clock_->Now();
    PromoteDueLocked(now);
    absl::Duration wait = options_.poll_interval;
    for (const auto& [key, at] : delayed_) wait = std::min(wait, at - now);
    timer_cv_.WaitWithTimeout(&mu_, std::max(wait, absl::Milliseconds(1)));
  }
}

}  // namespace coach::core
