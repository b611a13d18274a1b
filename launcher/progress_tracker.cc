#include "launcher/progress_tracker.h"

namespace coach::launcher {
namespace {

metrics::ProgressAccumulatorOptions AccumulatorOptions(const ProgressTrackerOptions& options) {
  metrics::ProgressAccumulatorOptions o;
  o.rate_window = options.rate_window;
  o.max_metrics = options.max_metrics;
  return o;
}

}  // namespace

ProgressTracker::ProgressTracker(ProgressTrackerOptions options)
    : options_(options), progress_(AccumulatorOptions(options)) {}

void ProgressTracker::Observe(const metrics::MetricLine& metric, absl::Duration at) {
  absl::MutexLock lock(&mu_);
  if (progress_.Observe(metric, at)) ++version_;
}

std::optional<ProgressSnapshot> ProgressTracker::Due(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  const bool changed = version_ != sent_version_;
  const absl::Duration since = last_sent_ ? now - *last_sent_ : absl::InfiniteDuration();
  const bool report = changed && since >= options_.min_interval;
  const bool heartbeat = !changed && since >= options_.heartbeat_interval;
  if (!report && !heartbeat) return std::nullopt;
  return SnapshotLocked(now, heartbeat);
}

std::optional<ProgressSnapshot> ProgressTracker::Unsent(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  if (version_ == sent_version_) return std::nullopt;
  return SnapshotLocked(now, false);
}

ProgressSnapshot ProgressTracker::SnapshotLocked(absl::Duration now, bool heartbeat) {
  ProgressSnapshot s;
  s.step = progress_.step();
  s.metrics = progress_.metrics();
  s.steps_per_second = progress_.StepsPerSecond(now);
  s.heartbeat = heartbeat;
  s.version = version_;
  return s;
}

void ProgressTracker::Sent(const ProgressSnapshot& sent, absl::Duration now) {
  absl::MutexLock lock(&mu_);
  if (sent.version > sent_version_) sent_version_ = sent.version;
  last_sent_ = now;
}

void ProgressTracker::Failed(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  last_sent_ = now;
}

int64_t ProgressTracker::dropped_names() const {
  absl::MutexLock lock(&mu_);
  return progress_.dropped_names();
}

}  // namespace coach::launcher
