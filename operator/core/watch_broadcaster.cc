#include "operator/core/watch_broadcaster.h"

#include <algorithm>
#include <utility>

namespace coach::core {

bool WatchFilter::Matches(const api::v1::TrainingJob& job) const {
  if (!namespace_.empty() && job.metadata().namespace_() != namespace_) return false;
  if (!name.empty() && job.metadata().name() != name) return false;
  return selector.MatchesMap(job.metadata().labels());
}

absl::StatusOr<std::optional<WatchEvent>> Subscription::Next(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  // A Mutex condition is re-checked whenever mu_ is released (Push, End, Close), and the
  // timeout is relative: this wait reads no clock.
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || !ended_.ok() || closed_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (!queue_.empty()) {
    WatchEvent ev = std::move(queue_.front());
    queue_.pop_front();
    return std::optional<WatchEvent>(std::move(ev));
  }
  if (!ended_.ok()) return ended_;
  if (closed_) return absl::CancelledError("watch closed");
  return std::optional<WatchEvent>();
}

bool Subscription::Push(WatchEvent event) {
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= capacity_) return false;
  queue_.push_back(std::move(event));
  return true;
}

void Subscription::End(absl::Status why) {
  absl::MutexLock lock(&mu_);
  if (ended_.ok()) ended_ = std::move(why);
}

void Subscription::Close() {
  WatchBroadcaster* owner;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    owner = owner_;
  }
  if (owner != nullptr) owner->Remove(this);
}

Subscription::~Subscription() { Close(); }

WatchBroadcaster::~WatchBroadcaster() { Shutdown(); }

void WatchBroadcaster::SetObservers(std::function<void(size_t)> on_count,
                                    std::function<void()> on_drop) {
  absl::MutexLock lock(&mu_);
  on_count_ = std::move(on_count);
  on_drop_ = std::move(on_drop);
}

absl::StatusOr<std::shared_ptr<Subscription>> WatchBroadcaster::Subscribe(
    WatchFilter filter,
    const std::function<absl::StatusOr<std::vector<api::v1::TrainingJob>>()>& initial) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("the server is shutting down");
  absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs = initial();
  if (!jobs.ok()) return jobs.status();
  // Room for the whole initial listing on top of the usual bound.
  auto sub = std::shared_ptr<Subscription>(
      new Subscription(this, std::move(filter), capacity_ + jobs->size()));
  for (auto& job : *jobs) {
    if (sub->filter_.Matches(job)) sub->Push({WatchEventType::kAdded, std::move(job)});
  }
  subs_.push_back(sub.get());
  if (on_count_) on_count_(subs_.size());
  return sub;
}

void WatchBroadcaster::Publish(WatchEventType type, const api::v1::TrainingJob& job) {
  absl::MutexLock lock(&mu_);
  for (auto it = subs_.begin(); it != subs_.end();) {
    Subscription* sub = *it;
    if (!sub->filter_.Matches(job)) {
      ++it;
      continue;
    }
    if (sub->Push({type, job})) {
      ++it;
      continue;
    }
    {
      absl::MutexLock sub_lock(&sub->mu_);
      sub->owner_ = nullptr;
    }
    sub->End(absl::ResourceExhaustedError(
        "watch dropped: the client fell behind; list the jobs again and re-watch"));
    it = subs_.erase(it);
    if (on_drop_) on_drop_();
    if (on_count_) on_count_(subs_.size());
  }
}

void WatchBroadcaster::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  for (Subscription* sub : subs_) {
    {
      absl::MutexLock sub_lock(&sub->mu_);
      sub->owner_ = nullptr;
    }
    sub->End(absl::CancelledError("the server is shutting down"));
  }
  subs_.clear();
  if (on_count_) on_count_(0);
}

void WatchBroadcaster::Remove(Subscription* sub) {
  absl::MutexLock lock(&mu_);
  auto it = std::find(subs_.begin(), subs_.end(), sub);
  if (it == subs_.end()) return;
  subs_.erase(it);
  if (on_count_) on_count_(subs_.size());
}

size_t WatchBroadcaster::size() const {
  absl::MutexLock lock(&mu_);
  return subs_.size();
}

}  // namespace coach::core
