#pragma once

// A small map whose entries expire: the short-lived memory of TokenReview and
// SubjectAccessReview answers (kube_api_auth.h). Bounded: when full, expired entries go
// first, then the one closest to expiry. Thread-safe. Time only from the Clock it is given.

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::server {

template <typename V>
class TtlCache {
 public:
  // `clock` is not owned. max_entries >= 1.
  TtlCache(Clock* clock, size_t max_entries) : clock_(clock), max_entries_(max_entries) {}

  // The value stored under `key`, unless it has expired.
  std::optional<V> Get(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    if (clock_->Now() >= it->second.expires) {
      entries_.erase(it);
      return std::nullopt;
    }
    return it->second.value;
  }

  // Stores `value` under `key` for `ttl` (a non-positive ttl stores nothing).
  void Put(const std::string& key, V value, absl::Duration ttl) {
    if (ttl <= absl::ZeroDuration()) return;
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    if (entries_.size() >= max_entries_ && entries_.find(key) == entries_.end()) Evict(now);
    entries_[key] = Entry{std::move(value), now + ttl};
  }

  size_t size() {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    V value;
    absl::Time expires;
  };

  // A linear pass: only when full, and the bound is small (a few thousand).
  void Evict(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = now >= it->second.expires ? entries_.erase(it) : std::next(it);
    }
    if (entries_.size() < max_entries_) return;
    auto soonest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.expires < soonest->second.expires) soonest = it;
    }
    entries_.erase(soonest);
  }

  Clock* const clock_;
  const size_t max_entries_;
  absl::Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::server
