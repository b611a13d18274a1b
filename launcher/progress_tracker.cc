#include "launcher/progress_tracker.h"

#include <algorithm>

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
    : options_(options),
      min_interval_(options.min_interval),
      heartbeat_interval_(options.heartbeat_interval),
      progress_(std::in_place, AccumulatorOptions(options)) {}

void ProgressTracker::Observe(const metrics::MetricLine& metric, absl::Duration at) {
  absl::MutexLock lock(&mu_);
  if (progress_->Observe(metric, at)) ++version_;
}

std::optional<ProgressSnapshot> ProgressTracker::Due(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  const bool changed = version_ != sent_version_;
  const absl::Duration since = last_sent_ ? now - *last_sent_ : absl::InfiniteDuration();
  const bool report = changed && since >= min_interval_;
  const bool heartbeat = !changed && since >= heartbeat_interval_;
  if (!report && !heartbeat) return std::nullopt;
  return SnapshotLocked(now, heartbeat);
}

ProgressSnapshot ProgressTracker::Current(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  return SnapshotLocked(now, version_ == sent_version_);
}

absl::Duration ProgressTracker::UntilDue(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  if (!last_sent_) return absl::ZeroDuration();
  const absl::Duration interval = version_ != sent_version_ ? min_interval_ : heartbeat_interval_;
  return std::max(*last_sent_ + interval - now, absl::ZeroDuration());
}

void ProgressTracker::SetIntervals(absl::Duration min_interval, absl::Duration heartbeat_interval) {
  absl::MutexLock lock(&mu_);
  min_interval_ = min_interval;
  heartbeat_interval_ = heartbeat_interval;
}

void ProgressTracker::Restart() {
  absl::MutexLock lock(&mu_);
  progress_.emplace(AccumulatorOptions(options_));
  // A version never goes back: a snapshot of the old progress that is answered later must not
  // count as sending what comes next.
  ++version_;
  sent_version_ = version_;
}

std::optional<ProgressSnapshot> ProgressTracker::Unsent(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  if (version_ == sent_version_) return std::nullopt;
  return SnapshotLocked(now, false);
}

ProgressSnapshot ProgressTracker::SnapshotLocked(absl::Duration now, bool heartbeat) {
  ProgressSnapshot s;
  s.step = progress_->step();
  s.first_step = progress_->first_step();
  s.metrics = progress_->metrics();
  s.steps_per_second = progress_->StepsPerSecond(now);
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
  return progress_->dropped_names();
}

}  // namespace coach::launcher
