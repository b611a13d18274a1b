#pragma once

// Fans job changes out to WatchJobs subscribers.
//
// Every subscriber has a bounded queue. Publish() never blocks on a subscriber: when a
// queue is full the subscriber is dropped (its Next() returns ResourceExhausted telling
// the client to re-list and watch again), so a slow client cannot stall the controller.
// Subscribe() runs the caller's initial listing under the broadcaster's lock, so the
// ADDED events of the current jobs come before any later change and none is missed.
//
// Thread-safe.

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "operator/core/label_selector.h"

namespace coach::core {

enum class WatchEventType { kAdded, kModified, kDeleted };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  api::v1::TrainingJob job;
};

struct WatchFilter {
  std::string namespace_;  // empty: every namespace
  std::string name;        // empty: every job
  LabelSelector selector;

  bool Matches(const api::v1::TrainingJob& job) const;
};

class WatchBroadcaster;

class Subscription {
 public:
  // The next event; nullopt when none came within `timeout` (poll for cancellation and
  // call again). Errors: ResourceExhausted (dropped for falling behind), Cancelled
  // (Close() or the broadcaster shut down).
  absl::StatusOr<std::optional<WatchEvent>> Next(absl::Duration timeout);
  // Unsubscribes. Idempotent; also done by the destructor.
  void Close();
  ~Subscription();

 private:
  friend class WatchBroadcaster;
  Subscription(WatchBroadcaster* owner, WatchFilter filter, size_t capacity)
      : owner_(owner), filter_(std::move(filter)), capacity_(capacity) {}
  // False when the queue is full (the caller drops the subscriber).
  bool Push(WatchEvent event);
  void End(absl::Status why);

  WatchBroadcaster* owner_;
  const WatchFilter filter_;
  size_t capacity_;
  absl::Mutex mu_;
  std::deque<WatchEvent> queue_ ABSL_GUARDED_BY(mu_);
  absl::Status ended_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class WatchBroadcaster {
 public:
  // `on_count` hears the number of subscribers after every change; `on_drop` each drop.
  explicit WatchBroadcaster(size_t queue_capacity = 1000) : capacity_(queue_capacity) {}
  ~WatchBroadcaster();

  void SetObservers(std::function<void(size_t)> on_count, std::function<void()> on_drop);

  // Registers a subscriber. `initial` lists the current jobs (it runs under the lock, so
  // nothing published meanwhile is lost); each matching job becomes an ADDED event.
  // Errors: those of `initial`; Unavailable after Shutdown().
  absl::StatusOr<std::shared_ptr<Subscription>> Subscribe(
      WatchFilter filter,
      const std::function<absl::StatusOr<std::vector<api::v1::TrainingJob>>()>& initial);

  void Publish(WatchEventType type, const api::v1::TrainingJob& job);

  // Ends every subscription with Cancelled; later Subscribe() calls fail.
  void Shutdown();

  size_t size() const;

 private:
  friend class Subscription;
  void Remove(Subscription* sub);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::vector<Subscription*> subs_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(size_t)> on_count_;
  std::function<void()> on_drop_;
};

}  // namespace coach::core
