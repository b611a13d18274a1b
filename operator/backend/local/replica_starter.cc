#include "operator/backend/local/replica_starter.h"

namespace coach::backend::local {

ReplicaStarter::ReplicaStarter(int threads, EndedFn ended) : ended_(std::move(ended)) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

ReplicaStarter::~ReplicaStarter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void ReplicaStarter::Queue(const store::JobKey& job, const std::string& pod, StartFn start) {
  absl::MutexLock lock(&mu_);
  ++in_flight_[job];
  tasks_.push_back([this, job, pod, start = std::move(start)] {
    const absl::Status started = start();
    if (!started.ok()) {
      absl::MutexLock lock(&mu_);
      errors_[{job, pod}] = started;
    }
    if (ended_) ended_(job);
    absl::MutexLock lock(&mu_);
    if (--in_flight_[job] <= 0) in_flight_.erase(job);
  });
}

absl::Status ReplicaStarter::TakeError(const store::JobKey& job, const std::string& pod) {
  absl::MutexLock lock(&mu_);
  auto failed = errors_.find({job, pod});
  if (failed == errors_.end()) return absl::OkStatus();
  absl::Status s = std::move(failed->second);
  errors_.erase(failed);
  return s;
}

void ReplicaStarter::ForgetErrors(const store::JobKey& job) {
  absl::MutexLock lock(&mu_);
  for (auto it = errors_.begin(); it != errors_.end();) {
    it = it->first.first == job ? errors_.erase(it) : std::next(it);
  }
}

void ReplicaStarter::WaitForJob(const store::JobKey& job) {
  absl::MutexLock lock(&mu_);
  auto idle = [this, &job]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return in_flight_.count(job) == 0; };
  mu_.Await(absl::Condition(&idle));
}

void ReplicaStarter::WaitForAll() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return in_flight_.empty(); };
  mu_.Await(absl::Condition(&idle));
}

void ReplicaStarter::Loop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]()
                       ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || !tasks_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (tasks_.empty()) return;  // stopping, and nothing left to start
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace coach::backend::local
