#pragma once

// ProgressTracker: what coach-launch tells the operator about its workers' progress, and when
// (the sending is progress_reporter.h's). Fed the metric lines MetricsTee parses
// (metric_line.h), it keeps their progress (common/metrics/progress_accumulator.h: the highest
// step, the latest finite value of each metric name, at most `max_metrics` names, and the
// steps per second over about `rate_window` up to the time asked; non-finite values are left
// out because the operator refuses them) and says when to send:
//   a report          when any of it changed since the last report that went out and
//                     `min_interval` passed since the last try
//   a heartbeat       when nothing changed and `heartbeat_interval` passed since the last try
// The intervals may change while it runs (SetIntervals: an in-place restart's launcher reports
// more often), and the progress may start afresh (Restart: a new attempt resumes from a
// checkpoint, its steps may be lower than the last attempt's). Times are monotonic readings
// (Clock::Monotonic) the caller passes in. Thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics/metric_line.h"
#include "common/metrics/progress_accumulator.h"

namespace coach::launcher {

struct ProgressTrackerOptions {
  absl::Duration min_interval = absl::Seconds(2);
  absl::Duration heartbeat_interval = absl::Seconds(30);
  absl::Duration rate_window = absl::Seconds(30);
  size_t max_metrics = 64;
};

struct ProgressSnapshot {
  int64_t step = 0;
  std::optional<int64_t> first_step;  // the lowest step since the start or Restart
  std::map<std::string, double> metrics;
  double steps_per_second = 0;
  bool heartbeat = false;
  // Identifies the state sent (for Sent).
  uint64_t version = 0;
};

class ProgressTracker {
 public:
  explicit ProgressTracker(ProgressTrackerOptions options = {});

  // A metric line the workers printed, read at `at`.
  void Observe(const metrics::MetricLine& metric, absl::Duration at);

  // What to send at `now`, if anything is due (see the file comment).
  std::optional<ProgressSnapshot> Due(absl::Duration now);
  // What to send at `now` whatever the intervals say: what changed, else a heartbeat.
  ProgressSnapshot Current(absl::Duration now);
  // How long after `now` Due will have something without a new Observe; zero when it has now.
  absl::Duration UntilDue(absl::Duration now);
  // What changed since the last send, whatever the intervals say (the last report at exit).
  std::optional<ProgressSnapshot> Unsent(absl::Duration now);
  // `sent` went out at `now`: the intervals count from here.
  void Sent(const ProgressSnapshot& sent, absl::Duration now);
  // A report was tried at `now` and failed: the intervals count from here, and what changed
  // stays unsent (due again after min_interval).
  void Failed(absl::Duration now);

  // From now on; both > 0.
  void SetIntervals(absl::Duration min_interval, absl::Duration heartbeat_interval);
  // Forgets the progress (step, metrics, rate window) and what of it was unsent; the intervals
  // still count from the last try.
  void Restart();

  // Metric names left out over max_metrics.
  int64_t dropped_names() const;

 private:
  ProgressSnapshot SnapshotLocked(absl::Duration now, bool heartbeat)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ProgressTrackerOptions options_;
  mutable absl::Mutex mu_;
  absl::Duration min_interval_ ABSL_GUARDED_BY(mu_);
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mu_);
  // Always set; emplaced afresh by Restart (its options are const).
  std::optional<metrics::ProgressAccumulator> progress_ ABSL_GUARDED_BY(mu_);
  // Counts the changes to progress_; the last one sent.
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t sent_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Duration> last_sent_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::launcher
