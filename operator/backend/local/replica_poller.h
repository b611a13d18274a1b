#pragma once

// How the local backend learns that a replica ended: this poller's thread hears of a started
// replica's end at once from its shim's end-of-file descriptor (end_watcher.h) and wakes the
// job; every poll interval it also polls every running record, since replicas adopted after an
// operator restart have no descriptor. A woken job's next pass observes the exit (Observe
// records it); the poller itself records only what its periodic poll found.
//
// Thread-safe. The hooks run on the poller's thread.

#include <functional>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/backend/local/end_watcher.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

class ReplicaPoller {
 public:
  // Polls every running replica (recording the ends it finds); returns the jobs of those that
  // ended.
  using PollFn = std::function<std::set<store::JobKey>()>;
  // Wakes the jobs whose replicas ended (never called with none).
  using WakeFn = std::function<void(const std::set<store::JobKey>&)>;

  // `ends` is not owned and must outlive the poller; `interval` > 0.
  ReplicaPoller(EndWatcher* ends, absl::Duration interval, PollFn poll, WakeFn wake);
  // Stop().
  ~ReplicaPoller();
  ReplicaPoller(const ReplicaPoller&) = delete;
  ReplicaPoller& operator=(const ReplicaPoller&) = delete;

  // Starts the thread; the first periodic poll comes one interval later. Nothing while it
  // runs.
  void Start();
  // Stops the thread and waits for it (a poll or wake under way ends first); Start may start
  // it again.
  void Stop();

 private:
  void Loop();

  EndWatcher* const ends_;
  const absl::Duration interval_;
  const PollFn poll_;
  const WakeFn wake_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::backend::local
