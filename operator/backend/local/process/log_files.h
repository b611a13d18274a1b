#pragma once

// Per-replica log files (their paths: local_layout.h). The shim is the only writer
// (LogWriter): the program's stdout and stderr reach it through a pipe, so the bound holds at
// any write rate. Readers for "tail N lines" and "follow from a position" cope with a rotation
// between two reads.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coach::backend::local {

// Appends to a log of at most `max_bytes` live bytes plus one rotated file of at most as many:
// when the next bytes do not fit, the live file is renamed to `<path>.1` (replacing the older
// one) and a new live file begins, so the newest bytes are always kept and the disk a replica's
// log uses stays within 2 * max_bytes whatever the rate. Within a write that crosses the
// bound, the rotation falls after its last newline that still fits, so lines stay whole
// where one fits. Nothing is buffered: Write returns once the bytes are in the file.
// Not thread-safe.
class LogWriter {
 public:
  // Opens (creates) `path` for appending; what it already holds counts toward the bound.
  // max_bytes <= 0 means unbounded (never rotates). Errors: Internal (open, fstat).
  static absl::StatusOr<std::unique_ptr<LogWriter>> Open(const std::string& path,
                                                         int64_t max_bytes);
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Writes all of `data`, rotating as often as it takes. Errors: Internal (write, rename or
  // open failed); the bytes not written are dropped, and the next Write tries again.
  absl::Status Write(absl::string_view data);

  // The live file's descriptor; it changes at each rotation.
  int fd() const { return fd_; }
  // How many times the log rotated since Open.
  int64_t rotations() const { return rotations_; }

 private:
  LogWriter(std::string path, int64_t max_bytes, int fd, int64_t size)
      : path_(std::move(path)), max_bytes_(max_bytes), fd_(fd), size_(size) {}
  absl::Status WriteAll(absl::string_view data);
  absl::Status Rotate();

  std::string path_;
  int64_t max_bytes_;
  int fd_;
  int64_t size_;  // Of the live file: the writer is its only writer.
  int64_t rotations_ = 0;
};

// The last `lines` lines of the live file (fewer when it has fewer); when the live
// file holds fewer lines than asked and a rotated `.1` exists, earlier lines come
// from it. Errors: NotFound (no log at all), Internal.
absl::StatusOr<std::string> TailLines(const std::string& path, int lines);

// A reader's place in a log: a byte offset in one file, named by its inode and birth time
// (inode 0: whichever file is live). They tell a rotation apart from growth: after one, the
// live file is a new file that may already be longer than the offset, and may even reuse the
// inode number of the file read before (hence the birth time, where the file system keeps one).
struct LogPosition {
  int64_t offset = 0;
  uint64_t inode = 0;
  int64_t born_ns = 0;  // 0: unknown
};

// The end of the live file now (offset 0 and the inode 0 when there is none).
LogPosition LogEnd(const std::string& path);

struct FollowChunk {
  std::string data;
  LogPosition next;        // Pass back to the next Follow call.
  bool truncated = false;  // The log rotated since the position given.
  // More than one rotation since: bytes between the position and the current `.1` are gone.
  bool lost = false;
};

// The bytes from `from` on, at most `max_bytes` of them. When the log rotated since `from`
// (the live file is another file, or shorter than the offset), the rest of the old file
// is read from `<path>.1` first, then the new live file from its start. A missing file
// yields no data and position 0. Errors: Internal.
absl::StatusOr<FollowChunk> Follow(const std::string& path, const LogPosition& from,
                                   int64_t max_bytes = 1 << 20);

}  // namespace coach::backend::local
