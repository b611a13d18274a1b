#include "common/metrics/progress_accumulator.h"

#include <algorithm>
#include <cmath>

namespace coach::metrics {

// The rate is the step's growth from an anchor sample, the newest one at or before the
// window's start (so a pause shows as a slower rate rather than none), to the time asked.
// Samples are kept at least window/32 apart, the newest sliding forward until it is that far
// from the one before it: memory stays at about 34 samples whatever the line rate and the
// window, and every sample is a step at the very reading it was reached. (A fixed spacing
// instead grows with the window, and merging a step into an older sample credits it to an
// earlier time, which biases the rate low once that sample anchors the window.)
constexpr int kSamplesPerWindow = 32;

bool ProgressAccumulator::Observe(const MetricLine& line, absl::Duration at) {
  bool changed = false;
  const bool first = !any_line_;
  any_line_ = true;
  const int64_t at_least_zero = std::max<int64_t>(line.step, 0);
  first_step_ = std::min(first_step_.value_or(at_least_zero), at_least_zero);
  if (line.step > step_) {
    step_ = line.step;
    changed = true;
  }
  // The first line anchors the rate too: the steps after it count from it.
  if (changed || first) {
    const Sample sample{at, step_};
    if (samples_.size() >= 2 &&
        at - samples_[samples_.size() - 2].at < options_.rate_window / kSamplesPerWindow) {
      samples_.back() = sample;
    } else {
      samples_.push_back(sample);
    }
  }
  // The oldest sample goes once the next one is old enough to anchor the window by itself.
  while (samples_.size() >= 2 && samples_[1].at <= at - options_.rate_window) {
    samples_.pop_front();
  }
  return ObserveValue(line) || changed;
}

bool ProgressAccumulator::ObserveValue(const MetricLine& line) {
  if (!std::isfinite(line.value) && !options_.keep_non_finite) return false;
  auto it = metrics_.find(line.name);
  if (it == metrics_.end()) {
    if (metrics_.size() >= options_.max_metrics) {
      ++dropped_names_;
      return false;
    }
    metrics_.emplace(line.name, line.value);
    return true;
  }
  if (it->second == line.value || (std::isnan(it->second) && std::isnan(line.value))) {
    return false;
  }
  it->second = line.value;
  return true;
}

double ProgressAccumulator::StepsPerSecond(absl::Duration now) const {
  if (samples_.empty()) return 0;
  // Observe pruned up to its own reading; a later `now` may move the anchor further on.
  size_t anchor = 0;
  while (anchor + 1 < samples_.size() && samples_[anchor + 1].at <= now - options_.rate_window) {
    ++anchor;
  }
  const Sample& from = samples_[anchor];
  const double seconds = absl::ToDoubleSeconds(now - from.at);
  if (seconds <= 0) return 0;
  return static_cast<double>(step_ - from.step) / seconds;
}

}  // namespace coach::metrics
