#pragma once

// The metric line format that training programs print. coach-launch reads it from its
// workers' stdout (and from $COACH_METRICS_FILE) and logs it to the job's MLflow run; the local
// backend's replica shim reads it from the replica's output as the replica's progress
// (operator/backend/local/process/progress_tracker.h):
//
//   coach-metric name=<key> value=<number> [step=<int>] [timestamp=<ms since epoch>]
//
// - The line starts with "coach-metric" followed by one or more spaces/tabs; fields are
//   key=value separated by spaces/tabs, in any order; a trailing '\r' is ignored.
// - name (required): an MLflow metric key (letters, digits, _ - . / space-free, at most 250).
// - value (required): a decimal or exponent number, or nan/inf/-inf (case-insensitive).
// - step (optional, default 0): a 64-bit integer.
// - timestamp (optional, default: when coach-launch read the line): integer milliseconds
//   since the Unix epoch, >= 0.
// - Other keys are ignored (room for later fields); a key given twice is an error.
// Lines that do not start with "coach-metric" are not metric lines. A metric line that breaks
// the rules is reported (InvalidArgument naming the field) and logged nowhere.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coach::metrics {

struct MetricLine {
  std::string name;
  double value = 0;
  int64_t step = 0;
  std::optional<int64_t> timestamp_ms;
};

// nullopt: not a metric line. InvalidArgument: a malformed metric line.
absl::StatusOr<std::optional<MetricLine>> ParseMetricLine(absl::string_view line);

}  // namespace coach::metrics
