#pragma once

// MetricLineScanner: the coach-metric lines (common/metrics/metric_line.h) in a byte stream,
// a replica's stdout and stderr as its shim copies them into the log. It sees every byte a
// replica prints, so everything else costs it as little as can be: past a line that is not a
// metric line it jumps with one memmem to the next "\ncoach-metric" (no work per line; a
// program printing short lines as fast as it can is slowed by it hardly at all), and a line
// is copied aside only while it still starts like a metric line, at most kMaxLine bytes of it
// (a longer one is dropped). A line ends with '\n' (a '\r' before it is ignored); the
// stream's unterminated tail is not a line, as for coach-launch. Malformed metric lines are
// counted and dropped. Pure; not thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "common/metrics/metric_line.h"

namespace coach::backend::local {

class MetricLineScanner {
 public:
  static constexpr size_t kMaxLine = 4096;
  using Sink = absl::FunctionRef<void(const metrics::MetricLine&)>;

  // The next bytes of the stream; `sink` gets each complete metric line in them.
  void Feed(absl::string_view data, Sink sink);

  int64_t malformed() const { return malformed_; }

 private:
  enum class State {
    kLineStart,  // the next byte starts a line
    kCandidate,  // the current line starts like a metric line: line_ holds it so far
    kSkipping,   // the current line is not a metric line
  };
  State state_ = State::kLineStart;
  std::string line_;
  int64_t malformed_ = 0;
};

}  // namespace coach::backend::local
