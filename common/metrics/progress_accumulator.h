#pragma once

// ProgressAccumulator: progress from coach-metric lines (metric_line.h), the part shared by
// coach-launch's report to the operator (launcher/progress_tracker.h) and the local backend's
// replica shim (operator/backend/local/process/progress_tracker.h). Fed each line with a
// monotonic reading (Clock::Monotonic, so a wall-clock step cannot make a rate), it keeps
//   step              the highest step= seen (0 before any; never below 0)
//   first step        the lowest step= seen (where a resumed run began)
//   metrics           the latest value of each metric name, the first `max_metrics` names (a
//                     later new name is dropped and counted, so a program that makes up names
//                     cannot grow it); a non-finite value is left out unless `keep_non_finite`
//                     says otherwise, and the previous value stays
//   steps per second  the highest step's advance over about the last `rate_window`, measured
//                     up to the time asked, so that it falls to 0 when steps stop
// Not thread-safe.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "common/metrics/metric_line.h"

namespace coach::metrics {

struct ProgressAccumulatorOptions {
  // > 0.
  absl::Duration rate_window = absl::Seconds(30);
  size_t max_metrics = 64;
  // NaN and infinities kept as values (a diverged loss is worth showing where the reader
  // accepts them) rather than left out (where the reader refuses them).
  bool keep_non_finite = false;
};

class ProgressAccumulator {
 public:
  explicit ProgressAccumulator(ProgressAccumulatorOptions options = {}) : options_(options) {}

  // A metric line read at monotonic reading `at`. Returns whether the step or a kept value
  // changed.
  bool Observe(const MetricLine& line, absl::Duration at);

  int64_t step() const { return step_; }
  // The lowest step seen (never below 0); nullopt before any line.
  std::optional<int64_t> first_step() const { return first_step_; }
  const std::map<std::string, double>& metrics() const { return metrics_; }
  // The rate at monotonic reading `now` (not before the last Observe's); 0 when unknown.
  double StepsPerSecond(absl::Duration now) const;
  // New metric names left out over max_metrics.
  int64_t dropped_names() const { return dropped_names_; }

 private:
  struct Sample {
    absl::Duration at;
    int64_t step;
  };
  bool ObserveValue(const MetricLine& line);

  const ProgressAccumulatorOptions options_;
  int64_t step_ = 0;
  std::optional<int64_t> first_step_;
  std::map<std::string, double> metrics_;
  int64_t dropped_names_ = 0;
  bool any_line_ = false;
  // Each sample is the step at the reading it was reached, oldest first; the newest is step_.
  std::deque<Sample> samples_;
};

}  // namespace coach::metrics
