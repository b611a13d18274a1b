#pragma once

// BurstTrimmer: gives the allocator's free memory back to the system once a burst of work is
// over. glibc keeps what a burst of controller passes freed in the arenas of the
// threads that freed it (the start-up pass over every stored job, a thousand jobs submitted at
// once): the process stays at its peak after the work is done. malloc_trim(0) returns every
// arena's free pages; it takes each arena's lock while it runs (a few milliseconds for tens of
// MiB), so it runs when a burst ended (an interval without work after one with) and, while a
// burst goes on, once every `max_busy_intervals` intervals. Nothing to do: never.
//
// Thread-safe.

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace coach::cmd {

struct BurstTrimmerOptions {
  // A burst is over after an interval without work.
  absl::Duration interval = absl::Seconds(1);
  // A burst that goes on is trimmed once a minute.
  int max_busy_intervals = 60;
};

class BurstTrimmer {
 public:
  // `activity`: a count that grows with the work done (Controller::passes). `trim`: returns the
  // free memory (malloc_trim(0)).
  BurstTrimmer(std::function<int64_t()> activity, std::function<void()> trim,
               BurstTrimmerOptions options = {});
  ~BurstTrimmer();  // Stop()

  // Ticks every interval on a thread of its own. Call once.
  void Start();
  // Idempotent.
  void Stop();

  // One interval, given `activity` now: trims (and returns true) or not. Start's thread calls it.
  bool Tick(int64_t activity);

 private:
  const std::function<int64_t()> activity_;
  const std::function<void()> trim_;
  const BurstTrimmerOptions options_;
  absl::Mutex mu_;
  int64_t trimmed_at_ ABSL_GUARDED_BY(mu_) = 0;  // activity at the last trim
  int64_t seen_ ABSL_GUARDED_BY(mu_) = 0;        // activity at the last tick
  int busy_intervals_ ABSL_GUARDED_BY(mu_) = 0;  // ticks with work since the last trim
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace coach::cmd
