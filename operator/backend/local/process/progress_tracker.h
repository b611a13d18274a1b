#pragma once

// ProgressTracker: a replica's progress record (progress_file.h) from the metric lines of its
// output. The progress itself is common/metrics/progress_accumulator.h's: the highest step,
// the latest value of each metric (the first kMaxProgressMetrics names; NaN and infinities
// kept, since the file carries them), and the steps per second over about the last `window`,
// as of the latest line. This adds the wall time the latest line was read, which the record
// says. Not thread-safe.

#include "absl/time/time.h"
#include "common/metrics/metric_line.h"
#include "common/metrics/progress_accumulator.h"
#include "operator/backend/local/process/progress_file.h"

namespace coach::backend::local {

class ProgressTracker {
 public:
  // `window` > 0.
  explicit ProgressTracker(absl::Duration window = absl::Seconds(60));

  // A metric line read at `now` (wall time, what the record says) and `monotonic` (a reading
  // of Clock::Monotonic, for the rate).
  void Observe(const metrics::MetricLine& line, absl::Time now, absl::Duration monotonic);

  // Whether any metric line was observed.
  bool has_progress() const { return time_ != absl::InfinitePast(); }
  ProgressRecord record() const;

 private:
  metrics::ProgressAccumulator progress_;
  absl::Time time_ = absl::InfinitePast();
  absl::Duration last_monotonic_;
};

}  // namespace coach::backend::local
