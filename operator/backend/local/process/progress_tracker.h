#pragma once

// ProgressTracker: a replica's progress record (progress_file.h) from the metric lines of its
// output: the highest step, the latest value of each metric (the first kMaxProgressMetrics
// names; a later new name is ignored, so a program that makes up names cannot grow it), when
// the latest line was read, and the steps per second over about the last `window`.
//
// The rate is the growth of the highest step between the oldest and the newest of a few
// samples that span the window (one sample older than the window anchors it, so a pause
// shows as a slower rate rather than none). Samples are kept at least window/32 apart: memory
// stays fixed at any line rate. Durations come from the monotonic clock, so a wall-clock
// step cannot make a rate. Pure; not thread-safe.

#include <cstdint>
#include <deque>

#include "absl/time/time.h"
#include "common/metrics/metric_line.h"
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
  bool has_progress() const { return record_.time != absl::InfinitePast(); }
  const ProgressRecord& record() const { return record_; }

 private:
  struct Sample {
    absl::Duration at;
    int64_t step;
  };

  const absl::Duration window_;
  ProgressRecord record_;
  bool any_step_ = false;
  std::deque<Sample> samples_;
};

}  // namespace coach::backend::local
