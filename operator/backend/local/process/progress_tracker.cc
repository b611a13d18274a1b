#include "operator/backend/local/process/progress_tracker.h"

namespace coach::backend::local {
namespace {

metrics::ProgressAccumulatorOptions AccumulatorOptions(absl::Duration window) {
  metrics::ProgressAccumulatorOptions o;
  o.rate_window = window;
  o.max_metrics = kMaxProgressMetrics;
  o.keep_non_finite = true;
  return o;
}

}  // namespace

ProgressTracker::ProgressTracker(absl::Duration window) : progress_(AccumulatorOptions(window)) {}

void ProgressTracker::Observe(const metrics::MetricLine& line, absl::Time now,
                              absl::Duration monotonic) {
  progress_.Observe(line, monotonic);
  time_ = now;
  last_monotonic_ = monotonic;
}

ProgressRecord ProgressTracker::record() const {
  ProgressRecord r;
  r.step = progress_.step();
  r.metrics = progress_.metrics();
  // As of the latest line, whose time the record gives.
  r.steps_per_second = progress_.StepsPerSecond(last_monotonic_);
  r.time = time_;
  return r;
}

}  // namespace coach::backend::local
