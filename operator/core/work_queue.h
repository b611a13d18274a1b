#pragma once

// The controller's work queue, with client-go's semantics:
//  - a key is queued at most once ("dirty" set), however often it is added;
//  - a key handed out by Get() is "processing" until Done(); adding it meanwhile marks
//    it dirty and it is queued again on Done(), so one key is never processed by two
//    workers at once and no change is lost;
//  - AddAt() queues a key once the clock reaches a time (requeue_at timers);
//    AddRateLimited() after an exponential per-key backoff (base * 2^failures, capped),
//    Forget() resets the key's failure count.
// Time comes from the injected Clock; a background thread moves due keys to the queue,
// waking at least every `poll_interval` so a fake clock's jumps are noticed.
//
// Thread-safe.

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/core/clock.h"

namespace coach::core {

class WorkQueue {
 public:
  struct Options {
    absl::Duration backoff_base = absl::Milliseconds(100);
    absl::Duration backoff_cap = absl::Seconds(60);
    absl::Duration poll_interval = absl::Milliseconds(100);
  };

  WorkQueue(Clock* clock, Options options);
  explicit WorkQueue(Clock* clock) : WorkQueue(clock, Options()) {}
  ~WorkQueue();  // ShutDown() and joins the timer thread.

  void Add(const std::string& key);
  // Queues `key` once clock->Now() >= at (at once when already due). A later AddAt for
  // the same key keeps the earlier time.
  void AddAt(const std::string& key, absl::Time at);
  // Queues `key` after its backoff; returns the delay chosen.
  absl::Duration AddRateLimited(const std::string& key);
  // Resets the key's backoff (after a successful pass).
  void Forget(const std::string& key);

  // Blocks for the next key; nullopt once shut down (queued keys are dropped).
  std::optional<std::string> Get();
  void Done(const std::string& key);

  // No more keys are handed out; Get() returns nullopt to every waiting worker.
  void ShutDown();
  bool shutting_down() const;

  // Keys waiting to be processed (not counting delayed ones).
  size_t Depth() const;
  // Keys waiting for their time.
  size_t DelayedCount() const;
  // The backoff a failing key gets now (for tests and metrics).
  absl::Duration BackoffFor(const std::string& key) const;

 private:
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TimerLoop();
  // Moves every due delayed key to the queue.
  void PromoteDueLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock* const clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_;
  absl::CondVar timer_cv_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> delayed_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::thread timer_;
};

}  // namespace coach::core
