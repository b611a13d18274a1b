#pragma once

// ProgressWriter: the shim's side of a replica's progress. It reads the metric lines in the
// bytes the shim copies from the replica's output (metric_line_scanner.h), keeps the progress
// record (progress_tracker.h) and writes it to the replica's progress file (progress_file.h):
// at once for the first line, then at most once per `interval` while lines come (the shim
// asks UntilDue() how long its wait on the output may be), and once more at the end (Flush).
// Nothing is written before the first metric line, so a replica that reports none has no
// file. A write is one small file and a rename, never synced, between two reads of the
// output; a failed write (a full disk) is tried again an interval later. Not thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/process/metric_line_scanner.h"
#include "operator/backend/local/process/progress_tracker.h"

namespace coach::backend::local {

class ProgressWriter {
 public:
  // `replica_files` names the file (ReplicaFile); `clock` is not owned.
  ProgressWriter(std::string replica_files, Clock* clock,
                 absl::Duration interval = absl::Seconds(1));

  // The next bytes of the replica's output.
  void Feed(absl::string_view data);
  // How long until a pending write is due (zero: now); nullopt when none is pending.
  std::optional<absl::Duration> UntilDue();
  // Writes the record when a write is pending and due.
  void WriteIfDue();
  // Writes the record when a write is pending, due or not: the replica's output ended.
  void Flush();

  int64_t writes() const { return writes_; }
  const ProgressTracker& tracker() const { return tracker_; }

 private:
  void Write();

  const std::string replica_files_;
  Clock* const clock_;
  const absl::Duration interval_;
  MetricLineScanner scanner_;
  ProgressTracker tracker_;
  bool pending_ = false;
  // Monotonic reading of the last write; none yet.
  std::optional<absl::Duration> last_write_;
  int64_t writes_ = 0;
};

}  // namespace coach::backend::local
