#pragma once

// ProgressTracker: what coach-launch tells the operator about its workers' progress, and when
// (the sending is progress_reporter.h's). Fed the metric lines MetricsTee parses
// (metric_line.h), it keeps
//   step              the highest step= seen (0 before any; never below 0)
//   metrics           the latest value of each metric name, at most `max_metrics` names (later
//                     new names are dropped and counted); non-finite values are left out (the
//                     operator refuses them) and the previous value stays
//   steps_per_second  the highest step's advance over about the last `rate_window`, measured
//                     up to the time asked, so that it falls to 0 when steps stop
// and says when to send:
//   a report          when any of it changed since the last report that went out and
//                     `min_interval` passed since the last try
//   a heartbeat       when nothing changed and `heartbeat_interval` passed since the last try
// Times are monotonic readings (Clock::Monotonic) the caller passes in. Thread-safe.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics/metric_line.h"

namespace coach::launcher {

struct ProgressTrackerOptions {
  absl::Duration min_interval = absl::Seconds(2);
  absl::Duration heartbeat_interval = absl::Seconds(30);
  absl::Duration rate_window = absl::Seconds(30);
  size_t max_metrics = 64;
};

struct ProgressSnapshot {
  int64_t step = 0;
  std::map<std::string, double> metrics;
  double steps_per_second = 0;
  bool heartbeat = false;
  // Identifies the state sent (for Sent).
  uint64_t version = 0;
};

class ProgressTracker {
 public:
  explicit ProgressTracker(ProgressTrackerOptions options = {}) : options_(options) {}

  // A metric line the workers printed, read at `at`.
  void Observe(const metrics::MetricLine& metric, absl::Duration at);

  // What to send at `now`, if anything is due (see the file comment).
  std::optional<ProgressSnapshot> Due(absl::Duration now);
  // What changed since the last send, whatever the intervals say (the last report at exit).
  std::optional<ProgressSnapshot> Unsent(absl::Duration now);
  // `sent` went out at `now`: the intervals count from here.
  void Sent(const ProgressSnapshot& sent, absl::Duration now);
  // A report was tried at `now` and failed: the intervals count from here, and what changed
  // stays unsent (due again after min_interval).
  void Failed(absl::Duration now);

  // Metric names left out over max_metrics.
  int64_t dropped_names() const;

 private:
  struct Sample {
    absl::Duration at;
    int64_t step;
  };
  void PruneLocked(absl::Duration now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double RateLocked(absl::Duration now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ProgressSnapshot SnapshotLocked(absl::Duration now, bool heartbeat)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ProgressTrackerOptions options_;
  mutable absl::Mutex mu_;
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, double> metrics_ ABSL_GUARDED_BY(mu_);
  std::deque<Sample> samples_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t sent_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Duration> last_sent_ ABSL_GUARDED_BY(mu_);
  int64_t dropped_names_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coach::launcher
