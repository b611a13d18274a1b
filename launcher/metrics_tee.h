#pragma once

// MetricsTee: takes the metric lines (metric_line.h) off coach-launch's forwarded worker
// stdout (OutputForwarder hands it every complete stdout line; copying the lines out is the
// forwarder's job) and hands them to a sink. Optionally tails a file ($COACH_METRICS_FILE) for
// metric lines too.
//
// Never in the way: the sink must not block (MetricLogger::Log does not); a malformed metric
// line is counted and the first few are reported through `report`.
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/metrics/metric_line.h"

namespace coach::launcher {

class MetricsTee {
 public:
  // `now_ms`: when the line was read, for lines without timestamp=.
  using Sink = std::function<void(const metrics::MetricLine& metric, int64_t now_ms)>;
  // One diagnostic line, without '\n'.
  using Report = std::function<void(const std::string& line)>;

  // `clock` (not owned) says when a line was read.
  MetricsTee(Sink sink, Report report, Clock* clock = Clock::Real());
  ~MetricsTee();  // Finish() unless finished

  MetricsTee(const MetricsTee&) = delete;
  MetricsTee& operator=(const MetricsTee&) = delete;

  // One complete stdout line of a worker (with its '\n' when it had one).
  void OnLine(absl::string_view line);

  // Tails `path` from its start (waiting for it to appear), every `poll`.
  void WatchFile(const std::string& path, absl::Duration poll = absl::Milliseconds(200));

  // Lets the file watcher read to the end once more, then stops it.
  void Finish();

  int64_t metric_lines() const { return metric_lines_.load(); }
  int64_t malformed_lines() const { return malformed_lines_.load(); }

 private:
  void TailFile(std::string path, absl::Duration poll);

  const Sink sink_;
  const Report report_;
  Clock* const clock_;
  std::vector<std::thread> threads_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> metric_lines_{0};
  std::atomic<int64_t> malformed_lines_{0};
  bool finished_ = false;
};

}  // namespace coach::launcher
