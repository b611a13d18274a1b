#include "operator/backend/local/process/log_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {
namespace {

// Reads [offset, offset + max) of `path`. A missing file reads as empty.
absl::StatusOr<std::string> ReadRange(const std::string& path, int64_t offset, int64_t max) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  }
  std::string out;
  char buf[65536];
  while (static_cast<int64_t>(out.size()) < max) {
    size_t want = std::min<int64_t>(sizeof(buf), max - static_cast<int64_t>(out.size()));
    ssize_t n = pread(fd, buf, want, offset + static_cast<int64_t>(out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      return absl::InternalError(absl::StrCat("read ", path, ": ", strerror(errno)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

int64_t SizeOrZero(const std::string& path) {
  absl::StatusOr<int64_t> size = FileSize(path);
  return size.ok() ? *size : 0;
}

}  // namespace

std::string ReplicaFilesBase(const std::string& state_dir, const std::string& ns,
                             const std::string& job, const std::string& replica) {
  return absl::StrCat(state_dir, "/replicas/", ns, "/", job, "/", replica, ".");
}

absl::StatusOr<std::string> ReplicaLogPath(const std::string& state_dir, const std::string& ns,
                                           const std::string& job, const std::string& replica) {
  for (const std::string* part : {&ns, &job, &replica}) {
    if (!IsSafePathComponent(*part)) {
      return absl::InvalidArgumentError(
          absl::StrCat("name '", *part, "' cannot be used in a log path"));
    }
  }
  return absl::StrCat(ReplicaFilesBase(state_dir, ns, job, replica), "log");
}

absl::StatusOr<bool> RotateIfOver(const std::string& path, int64_t max_bytes) {
  if (max_bytes <= 0) return false;
  absl::StatusOr<int64_t> size = FileSize(path);
  if (!size.ok()) {
    if (absl::IsNotFound(size.status())) return false;
    return size.status();
  }
  if (*size <= max_bytes) return false;
  // Read to EOF, not to the size seen above: what the writer appended since is kept,
  // which narrows the copytruncate loss window to the read-to-truncate gap.
  absl::StatusOr<std::string> contents = ReadRange(path, 0, INT64_MAX);
  if (!contents.ok()) return contents.status();
  absl::Status written = WriteFileAtomic(path + ".1", *contents);
  if (!written.ok()) return written;
  if (truncate(path.c_str(), 0) != 0) {
    return absl::InternalError(absl::StrCat("truncate ", path, ": ", strerror(errno)));
  }
  return true;
}

absl::StatusOr<std::string> TailLines(const std::string& path, int lines) {
  if (lines <= 0) return std::string();
  struct stat st;
  if (stat(path.c_str(), &st) != 0 && stat((path + ".1").c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("no log ", path));
  }
  // Walk back over the live file, then the rotated one, until enough newlines are seen.
  std::string text;
  for (const std::string& file : {path, path + ".1"}) {
    absl::StatusOr<std::string> whole = ReadRange(file, 0, SizeOrZero(file));
    if (!whole.ok()) return whole.status();
    text = *whole + text;
    int count = 0;
    // A trailing newline ends the last line; it does not start a new one.
    size_t end = text.size();
    if (end > 0 && text[end - 1] == '\n') --end;
    for (size_t i = end; i > 0; --i) {
      if (text[i - 1] == '\n' && ++count == lines) return text.substr(i);
    }
  }
  return text;
}

absl::StatusOr<FollowChunk> Follow(const std::string& path, int64_t offset, int64_t max_bytes) {
  FollowChunk chunk;
  int64_t size = SizeOrZero(path);
  if (offset < 0) offset = 0;
  if (size < offset) {
    chunk.truncated = true;
    absl::StatusOr<std::string> old = ReadRange(path + ".1", offset, max_bytes);
    if (!old.ok()) return old.status();
    chunk.data = *old;
    offset = 0;
  }
  int64_t room = max_bytes - static_cast<int64_t>(chunk.data.size());
  absl::StatusOr<std::string> fresh = ReadRange(path, offset, room);
  if (!fresh.ok()) return fresh.status();
  chunk.data += *fresh;
  chunk.next_offset = offset + static_cast<int64_t>(fresh->size());
  return chunk;
}

}  // namespace coach::backend::local
