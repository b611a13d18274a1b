#pragma once

// A replica's progress as its shim read it from the replica's output (coach-metric lines,
// progress_tracker.h), in the replica's file `progress` (ReplicaFile, exit_record.h):
//
//   {"step": <int>, "metrics": {"<name>": <number> | "nan" | "inf" | "-inf", ...},
//    "steps_per_second": <number >= 0>, "time": "<RFC 3339>"}
//
// JSON has no NaN or infinities, and a loss that diverged is worth reporting, so those three
// values are strings. The shim writes the file atomically (tmp + rename), without a sync: a
// power cut ends the replica it describes. Readers validate it: anything else, a file larger
// than kMaxProgressFileBytes included, is InvalidArgument, never a crash.
//
// Beside it, the replica's `heartbeat` file (kHeartbeatFileName): the replica may create or touch
// it (the local backend names it in COACH_HEARTBEAT_FILE); its mtime is progress in time only.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/backend/local/process/exit_record.h"

namespace coach::backend::local {

// The most metric names a progress record holds (the first ones reported).
inline constexpr int kMaxProgressMetrics = 64;
// Well above what kMaxProgressMetrics names of the longest valid name take.
inline constexpr int64_t kMaxProgressFileBytes = 64 * 1024;

struct ProgressRecord {
  // The highest step= of any metric line.
  int64_t step = 0;
  // The latest value of each metric.
  std::map<std::string, double> metrics;
  // Steps per second over the reporter's recent window; 0 when unknown.
  double steps_per_second = 0;
  // When the latest metric line was read.
  absl::Time time = absl::InfinitePast();

  bool operator==(const ProgressRecord& o) const;
};

std::string ProgressToJson(const ProgressRecord& record);
// Errors: InvalidArgument (not what ProgressToJson writes, or over kMaxProgressFileBytes, or
// more than kMaxProgressMetrics metrics).
absl::StatusOr<ProgressRecord> ProgressFromJson(absl::string_view json);

// Errors: Internal (I/O).
absl::Status WriteProgressFile(const std::string& replica_files, const ProgressRecord& record);
// Errors: NotFound (no report yet), InvalidArgument (corrupt), Internal (I/O).
absl::StatusOr<ProgressRecord> ReadProgressFile(const std::string& replica_files);

}  // namespace coach::backend::local
