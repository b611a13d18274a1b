#pragma once

// Per-replica log files: <state-dir>/replicas/<ns>/<job>/<replica>.log, next to the shim's
// files in the job's one directory (older operators wrote logs/<ns>/<job>/), bounded by
// copytruncate rotation (copy to <file>.1, truncate the live file in place so the
// writer's O_APPEND descriptor keeps working), plus readers for "tail N lines" and
// "follow from an offset" that cope with a truncation between two reads.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace coach::backend::local {

// Where the local backend keeps a replica's files, its log among them: the base
// "<state-dir>/replicas/<ns>/<job>/<replica>." that names them (ReplicaFile in exit_record.h).
// The names must be safe path components (ReplicaLogPath checks them).
std::string ReplicaFilesBase(const std::string& state_dir, const std::string& ns,
                             const std::string& job, const std::string& replica);

// ReplicaFilesBase + "log". Errors: InvalidArgument (a name is not a safe single path component).
absl::StatusOr<std::string> ReplicaLogPath(const std::string& state_dir, const std::string& ns,
                                           const std::string& job, const std::string& replica);

// When `path` is larger than `max_bytes`, copies it to `<path>.1` (replacing an older
// one, atomically) and truncates `path` to zero. Returns whether it rotated. Bytes the
// writer appends between the end of the copy and the truncation are lost
// (copytruncate's known window). The shim checks every 20 ms, so the disk holds about
// 2 * (max_bytes + what the program writes in 20 ms) per replica.
// max_bytes <= 0 means unbounded (never rotates).
// Errors: Internal (I/O). A missing file is not an error (returns false).
absl::StatusOr<bool> RotateIfOver(const std::string& path, int64_t max_bytes);

// The last `lines` lines of the live file (fewer when it has fewer); when the live
// file holds fewer lines than asked and a rotated `.1` exists, earlier lines come
// from it. Errors: NotFound (no log at all), Internal.
absl::StatusOr<std::string> TailLines(const std::string& path, int lines);

struct FollowChunk {
  std::string data;
  int64_t next_offset = 0;  // Pass back to the next Follow call.
  bool truncated = false;   // The file was rotated since `offset`.
};

// The bytes of the live file from `offset` on, at most `max_bytes` of them. When the
// file is now shorter than `offset` it was rotated: the rest of the old content is read
// from `<path>.1` (from `offset`, where it still holds it) followed by the live file from
// its start. A missing file yields no data and offset 0. Errors: Internal.
absl::StatusOr<FollowChunk> Follow(const std::string& path, int64_t offset,
                                   int64_t max_bytes = 1 << 20);

}  // namespace coach::backend::local
