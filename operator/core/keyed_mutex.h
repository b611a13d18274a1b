#pragma once

// Mutual exclusion per job key, between the controller's reconcile of a job and the API
// calls that touch the same job in the backend (Delete's Forget, Create's Admit), so a
// Backend is never called concurrently for one job (backend.h's contract).
//
// Thread-safe. Keys are held only while locked; nothing accumulates.

#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace coach::core {

class KeyedMutex {
 public:
  void Lock(const std::string& key) {
    absl::MutexLock lock(&mu_);
    while (held_.count(key) > 0) cv_.Wait(&mu_);
    held_.insert(key);
  }
  void Unlock(const std::string& key) {
    absl::MutexLock lock(&mu_);
    held_.erase(key);
    cv_.SignalAll();
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::set<std::string> held_ ABSL_GUARDED_BY(mu_);
};

class KeyLock {
 public:
  KeyLock(KeyedMutex* mu, std::string key) : mu_(mu), key_(std::move(key)) { mu_->Lock(key_); }
  ~KeyLock() { mu_->Unlock(key_); }
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;

 private:
  KeyedMutex* mu_;
  std::string key_;
};

}  // namespace coach::core
