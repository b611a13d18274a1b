#pragma once

// The controller's work queue, with client-go's semantics:
//  - a key is queued at most once ("dirty" set), however often it is added;
//  - a key handed out by Get() is "processing" until Done(); adding it meanwhile marks
//    it dirty and it is queued again on Done(), so one key is never processed by two
//    workers at once and no change is lost;
//  - AddAt() queues a key once the clock's wall time reaches a time (requeue_at timers);
//    AddAfter() once a duration has passed on its monotonic reading; AddRateLimited() after
//    an exponential per-key backoff (base * 2^failures, capped, through AddAfter), Forget()
//    resets the key's failure count. A key waiting for both a time and a duration is queued
//    by whichever comes first.
// Time comes from the injected Clock; a background thread moves due keys to the queue,
// waking at least every `poll_interval` so a fake clock's jumps are noticed.
//
// Keyed by any ordered, copyable Key: strings (the MLflow tracker), store::JobKey (the
// controller).
//
// Thread-safe.

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::core {

struct WorkQueueOptions {
  absl::Duration backoff_base = absl::Milliseconds(100);
  absl::Duration backoff_cap = absl::Seconds(60);
  absl::Duration poll_interval = absl::Milliseconds(100);
};

template <typename Key>
class BasicWorkQueue {
 public:
  using Options = WorkQueueOptions;

  BasicWorkQueue(Clock* clock, Options options);
  explicit BasicWorkQueue(Clock* clock) : BasicWorkQueue(clock, Options()) {}
  ~BasicWorkQueue();  // ShutDown() and joins the timer thread.

  void Add(const Key& key);
  // Queues `key` once clock->Now() >= at (at once when already due). A later AddAt for
  // the same key keeps the earlier time.
  void AddAt(const Key& key, absl::Time at);
  // Queues `key` once `delay` has passed on clock->Monotonic() (at once when not positive),
  // whatever the wall clock does meanwhile. A later AddAfter for the same key keeps the
  // earlier end.
  void AddAfter(const Key& key, absl::Duration delay);
  // Queues `key` after its backoff (AddAfter); returns the delay chosen.
  absl::Duration AddRateLimited(const Key& key);
  // Resets the key's backoff (after a successful pass).
  void Forget(const Key& key);

  // Blocks for the next key; nullopt once shut down (queued keys are dropped).
  std::optional<Key> Get();
  void Done(const Key& key);

  // No more keys are handed out; Get() returns nullopt to every waiting worker.
  void ShutDown();
  bool shutting_down() const;

  // Keys waiting to be processed (not counting delayed ones).
  size_t Depth() const;
  // Keys waiting for their time or duration.
  size_t DelayedCount() const;
  // The backoff a failing key gets now (for tests and metrics).
  absl::Duration BackoffFor(const Key& key) const;

 private:
  void AddLocked(const Key& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TimerLoop();
  // Moves every due delayed key to the queue (`now`: wall time, `elapsed`: monotonic).
  void PromoteDueLocked(absl::Time now, absl::Duration elapsed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // When a delayed key is due: a wall time (AddAt), a monotonic reading (AddAfter), or both
  // (the first to come queues it).
  struct Due {
    std::optional<absl::Time> at;
    std::optional<absl::Duration> elapsed;
  };

  Clock* const clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;
  absl::CondVar timer_cv_;
  std::deque<Key> queue_ ABSL_GUARDED_BY(mu_);
  std::set<Key> dirty_ ABSL_GUARDED_BY(mu_);
  std::set<Key> processing_ ABSL_GUARDED_BY(mu_);
  std::map<Key, Due> delayed_ ABSL_GUARDED_BY(mu_);
  std::map<Key, int> failures_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread timer_;
};

using WorkQueue = BasicWorkQueue<std::string>;

// --- implementation ---

template <typename Key>
BasicWorkQueue<Key>::BasicWorkQueue(Clock* clock, Options options)
    : clock_(clock), options_(options), timer_([this] { TimerLoop(); }) {}

template <typename Key>
BasicWorkQueue<Key>::~BasicWorkQueue() {
  ShutDown();
  if (timer_.joinable()) timer_.join();
}

template <typename Key>
void BasicWorkQueue<Key>::Add(const Key& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

template <typename Key>
void BasicWorkQueue<Key>::AddLocked(const Key& key) {
  if (shutdown_ || dirty_.count(key) > 0) return;
  dirty_.insert(key);
  // A key being processed is queued again by Done().
  if (processing_.count(key) > 0) return;
  queue_.push_back(key);
  work_cv_.Signal();
}

template <typename Key>
void BasicWorkQueue<Key>::AddAt(const Key& key, absl::Time at) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  if (at <= clock_->Now()) {
    AddLocked(key);
    return;
  }
  Due& due = delayed_[key];
  due.at = due.at.has_value() ? std::min(*due.at, at) : at;
  timer_cv_.Signal();
}

template <typename Key>
void BasicWorkQueue<Key>::AddAfter(const Key& key, absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  if (delay <= absl::ZeroDuration()) {
    AddLocked(key);
    return;
  }
  const absl::Duration end = clock_->Monotonic() + delay;
  Due& due = delayed_[key];
  due.elapsed = due.elapsed.has_value() ? std::min(*due.elapsed, end) : end;
  timer_cv_.Signal();
}

template <typename Key>
absl::Duration BasicWorkQueue<Key>::BackoffFor(const Key& key) const {
  absl::MutexLock lock(&mu_);
  auto it = failures_.find(key);
  const int failures = it == failures_.end() ? 0 : it->second;
  absl::Duration d = options_.backoff_base;
  for (int i = 0; i < failures && d < options_.backoff_cap; ++i) d *= 2;
  return std::min(d, options_.backoff_cap);
}

template <typename Key>
absl::Duration BasicWorkQueue<Key>::AddRateLimited(const Key& key) {
  const absl::Duration delay = BackoffFor(key);
  {
    absl::MutexLock lock(&mu_);
    ++failures_[key];
  }
  AddAfter(key, delay);
  return delay;
}

template <typename Key>
void BasicWorkQueue<Key>::Forget(const Key& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

template <typename Key>
std::optional<Key> BasicWorkQueue<Key>::Get() {
  absl::MutexLock lock(&mu_);
  while (queue_.empty() && !shutdown_) work_cv_.Wait(&mu_);
  if (shutdown_) return std::nullopt;
  Key key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

template <typename Key>
void BasicWorkQueue<Key>::Done(const Key& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.count(key) > 0 && !shutdown_) {
    queue_.push_back(key);
    work_cv_.Signal();
  }
}

template <typename Key>
void BasicWorkQueue<Key>::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  work_cv_.SignalAll();
  timer_cv_.SignalAll();
}

template <typename Key>
bool BasicWorkQueue<Key>::shutting_down() const {
  absl::MutexLock lock(&mu_);
  return shutdown_;
}

template <typename Key>
size_t BasicWorkQueue<Key>::Depth() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

template <typename Key>
size_t BasicWorkQueue<Key>::DelayedCount() const {
  absl::MutexLock lock(&mu_);
  return delayed_.size();
}

template <typename Key>
void BasicWorkQueue<Key>::PromoteDueLocked(absl::Time now, absl::Duration elapsed) {
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    const Due& due = it->second;
    if ((due.at.has_value() && *due.at <= now) ||
        (due.elapsed.has_value() && *due.elapsed <= elapsed)) {
      AddLocked(it->first);
      it = delayed_.erase(it);
    } else {
      ++it;
    }
  }
}

template <typename Key>
void BasicWorkQueue<Key>::TimerLoop() {
  absl::MutexLock lock(&mu_);
  while (!shutdown_) {
    const absl::Time now = clock_->Now();
    const absl::Duration elapsed = clock_->Monotonic();
    PromoteDueLocked(now, elapsed);
    absl::Duration wait = options_.poll_interval;
    for (const auto& [key, due] : delayed_) {
      if (due.at.has_value()) wait = std::min(wait, *due.at - now);
      if (due.elapsed.has_value()) wait = std::min(wait, *due.elapsed - elapsed);
    }
    timer_cv_.WaitWithTimeout(&mu_, std::max(wait, absl::Milliseconds(1)));
  }
}

}  // namespace coach::core
