#include "operator/backend/local/process/progress_tracker.h"

namespace coach::backend::local {

ProgressTracker::ProgressTracker(absl::Duration window) : window_(window) {}

void ProgressTracker::Observe(const metrics::MetricLine& line, absl::Time now,
                              absl::Duration monotonic) {
  record_.time = now;
  if (auto it = record_.metrics.find(line.name); it != record_.metrics.end()) {
    it->second = line.value;
  } else if (record_.metrics.size() < static_cast<size_t>(kMaxProgressMetrics)) {
    record_.metrics.emplace(line.name, line.value);
  }
  if (!any_step_ || line.step > record_.step) {
    any_step_ = true;
    record_.step = line.step;
    const Sample sample{monotonic, line.step};
    // The newest sample moves forward until it is far enough from the one before it.
    if (samples_.size() >= 2 && monotonic - samples_[samples_.size() - 2].at < window_ / 32) {
      samples_.back() = sample;
    } else {
      samples_.push_back(sample);
    }
  }
  // The oldest sample goes once the next one is old enough to anchor the window by itself.
  while (samples_.size() >= 2 && samples_[1].at <= monotonic - window_) samples_.pop_front();
  const Sample& anchor = samples_.front();
  const absl::Duration span = monotonic - anchor.at;
  record_.steps_per_second =
      span > absl::ZeroDuration()
          ? (static_cast<double>(record_.step) - static_cast<double>(anchor.step)) /
                absl::ToDoubleSeconds(span)
          : 0;
}

}  // namespace coach::backend::local
