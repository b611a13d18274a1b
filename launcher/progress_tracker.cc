#include "launcher/progress_tracker.h"

#include <cmath>

namespace coach::launcher {
namespace {

constexpr absl::Duration kSampleSpacing = absl::Milliseconds(100);

}  // namespace

void ProgressTracker::Observe(const metrics::MetricLine& metric, absl::Duration at) {
  absl::MutexLock lock(&mu_);
  bool changed = false;
  if (metric.step > step_) {
    step_ = metric.step;
    // At most one sample per kSampleSpacing, and none older than the window needs: memory stays
    // small however fast the steps come, and whether or not anyone asks for the rate.
    if (!samples_.empty() && at - samples_.back().at < kSampleSpacing) {
      samples_.back().step = step_;
    } else {
      samples_.push_back({at, step_});
    }
    PruneLocked(at);
    changed = true;
  }
  if (std::isfinite(metric.value)) {
    auto it = metrics_.find(metric.name);
    if (it == metrics_.end()) {
      if (metrics_.size() < options_.max_metrics) {
        metrics_.emplace(metric.name, metric.value);
        changed = true;
      } else {
        ++dropped_names_;
      }
    } else if (it->second != metric.value) {
      it->second = metric.value;
      changed = true;
    }
  }
  if (changed) ++version_;
}

void ProgressTracker::PruneLocked(absl::Duration now) {
  // Keep one sample at or before the window's start as the anchor the rate is measured from.
  while (samples_.size() > 1 && samples_[1].at <= now - options_.rate_window) {
    samples_.pop_front();
  }
}

double ProgressTracker::RateLocked(absl::Duration now) {
  PruneLocked(now);
  if (samples_.empty()) return 0;
  const Sample& first = samples_.front();
  const double seconds = absl::ToDoubleSeconds(now - first.at);
  if (samples_.size() < 2 || seconds <= 0) return 0;
  return static_cast<double>(samples_.back().step - first.step) / seconds;
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
  s.step = step_;
  s.metrics = metrics_;
  s.steps_per_second = RateLocked(now);
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
  return dropped_names_;
}

}  // namespace coach::launcher
