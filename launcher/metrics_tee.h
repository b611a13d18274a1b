#pragma once

// MetricsTee: coach-launch's reader of its workers' stdout. Each worker writes into a pipe;
// a thread per pipe copies every line, unchanged and whole, to the launcher's stdout (so logs
// look as without it) and hands the metric lines (metric_line.h) to a sink. Optionally tails
// a file ($COACH_METRICS_FILE) for metric lines too (not copied anywhere).
//
// Never in the way: the sink must not block (MetricLogger::Log does not); a malformed metric
// line is copied like any other and counted (the first few are reported on stderr).
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launcher/metric_line.h"

namespace coach::launcher {

class MetricsTee {
 public:
  // `now_ms`: when the line was read, for lines without timestamp=.
  using Sink = std::function<void(const MetricLine& metric, int64_t now_ms)>;

  // Lines are copied to `out_fd` (not owned); diagnostics go to `err_fd`.
  MetricsTee(int out_fd, int err_fd, Sink sink);
  ~MetricsTee();  // Finish(absl::ZeroDuration()) unless finished

  MetricsTee(const MetricsTee&) = delete;
  MetricsTee& operator=(const MetricsTee&) = delete;

  // A new pipe with a reader; returns the write end (close-on-exec) for a worker's stdout.
  // The tee keeps it open until Finish. Errors: Internal (pipe2 failed).
  absl::StatusOr<int> AddPipe();

  // Tails `path` from its start (waiting for it to appear), every `poll`.
  void WatchFile(const std::string& path, absl::Duration poll = absl::Milliseconds(200));

  // Closes the write ends, lets the readers drain to end-of-file (and the file watcher read to
  // the end) for up to `timeout` (a worker's child may hold a pipe open), then stops them.
  void Finish(absl::Duration timeout);

  int64_t metric_lines() const { return metric_lines_.load(); }
  int64_t malformed_lines() const { return malformed_lines_.load(); }

 private:
  void ReadPipe(int fd);
  void TailFile(std::string path, absl::Duration poll);
  // One complete line (with its '\n' when it had one). `echo`: copy it to out_fd_.
  void Line(const std::string& line, bool echo);

  const int out_fd_;
  const int err_fd_;
  const Sink sink_;
  std::mutex out_mu_;
  std::vector<int> write_ends_;
  std::vector<std::thread> threads_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> metric_lines_{0};
  std::atomic<int64_t> malformed_lines_{0};
  bool finished_ = false;
};

}  // namespace coach::launcher
