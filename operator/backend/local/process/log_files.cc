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

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// Reads [offset, offset + max) of the open file `fd` (named `path` in errors).
absl::StatusOr<std::string> ReadRangeFd(int fd, const std::string& path, int64_t offset,
                                        int64_t max) {
  std::string out;
  char buf[65536];
  while (static_cast<int64_t>(out.size()) < max) {
    size_t want = std::min<int64_t>(sizeof(buf), max - static_cast<int64_t>(out.size()));
    ssize_t n = pread(fd, buf, want, offset + static_cast<int64_t>(out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(absl::StrCat("read ", path));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Reads [offset, offset + max) of `path`. A missing file reads as empty.
absl::StatusOr<std::string> ReadRange(const std::string& path, int64_t offset, int64_t max) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return Errno(absl::StrCat("open ", path));
  }
  absl::StatusOr<std::string> out = ReadRangeFd(fd, path, offset, max);
  close(fd);
  return out;
}

int64_t SizeOrZero(const std::string& path) {
  absl::StatusOr<int64_t> size = FileSize(path);
  return size.ok() ? *size : 0;
}

int64_t BornNs(const struct statx& st) {
  if ((st.stx_mask & STATX_BTIME) == 0) return 0;
  return static_cast<int64_t>(st.stx_btime.tv_sec) * 1000000000 + st.stx_btime.tv_nsec;
}

// One open log file, read through the descriptor so that a rotation between looking at the
// file and reading it cannot swap the file read.
struct OpenLog {
  int fd = -1;
  int64_t size = 0;
  uint64_t inode = 0;
  int64_t born_ns = 0;
  OpenLog() = default;
  OpenLog(const OpenLog&) = delete;
  OpenLog& operator=(const OpenLog&) = delete;
  ~OpenLog() {
    if (fd >= 0) close(fd);
  }
};

// Opens `path` into `log`; a missing file leaves `log` closed (fd -1) and is not an error.
absl::Status OpenForReading(const std::string& path, OpenLog* log) {
  log->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (log->fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return Errno(absl::StrCat("open ", path));
  }
  struct statx st;
  if (statx(log->fd, "", AT_EMPTY_PATH, STATX_INO | STATX_SIZE | STATX_BTIME, &st) != 0) {
    return Errno(absl::StrCat("statx ", path));
  }
  log->size = static_cast<int64_t>(st.stx_size);
  log->inode = st.stx_ino;
  log->born_ns = BornNs(st);
  return absl::OkStatus();
}

bool SameFile(const OpenLog& log, const LogPosition& at) {
  return log.inode == at.inode &&
         (at.born_ns == 0 || log.born_ns == 0 || log.born_ns == at.born_ns);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LogWriter>> LogWriter::Open(const std::string& path,
                                                           int64_t max_bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(absl::StrCat("open ", path));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    absl::Status s = Errno(absl::StrCat("fstat ", path));
    close(fd);
    return s;
  }
  return std::unique_ptr<LogWriter>(new LogWriter(path, max_bytes, fd, st.st_size));
}

LogWriter::~LogWriter() {
  if (fd_ >= 0) close(fd_);
}

absl::Status LogWriter::WriteAll(absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(absl::StrCat("write ", path_));
    }
    size_ += n;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status LogWriter::Rotate() {
  ++rotations_;
  const std::string rotated = path_ + ".1";
  if (rename(path_.c_str(), rotated.c_str()) != 0) {
    const int rename_errno = errno;
    // Without a rotated file the bound still holds: the live file starts over in place.
    if (ftruncate(fd_, 0) == 0) size_ = 0;
    errno = rename_errno;
    return Errno(absl::StrCat("rename ", path_, " to ", rotated));
  }
  int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    absl::Status s = Errno(absl::StrCat("open ", path_));
    // Keep writing into the file just renamed, from its start, rather than past the bound.
    if (ftruncate(fd_, 0) == 0) size_ = 0;
    return s;
  }
  close(fd_);
  fd_ = fd;
  size_ = 0;
  return absl::OkStatus();
}

absl::Status LogWriter::Write(absl::string_view data) {
  if (max_bytes_ <= 0) return WriteAll(data);
  while (!data.empty()) {
    const int64_t room = std::max<int64_t>(0, max_bytes_ - size_);
    if (static_cast<int64_t>(data.size()) <= room) return WriteAll(data);
    size_t cut = 0;
    if (room > 0) {
      const size_t newline = data.substr(0, static_cast<size_t>(room)).rfind('\n');
      if (newline != absl::string_view::npos) {
        cut = newline + 1;
      } else if (size_ == 0) {
        // A line longer than the bound: it has to be split somewhere.
        cut = static_cast<size_t>(room);
      }
      // Else the line that does not fit begins the next file.
    }
    if (cut > 0) {
      absl::Status s = WriteAll(data.substr(0, cut));
      if (!s.ok()) return s;
    }
    data.remove_prefix(cut);
    absl::Status s = Rotate();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
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

LogPosition LogEnd(const std::string& path) {
  OpenLog live;
  if (!OpenForReading(path, &live).ok() || live.fd < 0) return LogPosition();
  return LogPosition{live.size, live.inode, live.born_ns};
}

absl::StatusOr<FollowChunk> Follow(const std::string& path, const LogPosition& from,
                                   int64_t max_bytes) {
  FollowChunk chunk;
  OpenLog live;
  if (absl::Status s = OpenForReading(path, &live); !s.ok()) return s;
  int64_t offset = std::max<int64_t>(0, from.offset);
  // A live file that is another file than the one `from` points into, or is shorter than
  // the offset, or is missing (between a rotation's rename and the new file) after bytes
  // were read: the log rotated since.
  const bool rotated = live.fd >= 0
                           ? (from.inode != 0 && !SameFile(live, from)) || live.size < offset
                           : offset > 0 || from.inode != 0;
  if (rotated) {
    chunk.truncated = true;
    OpenLog old;
    if (absl::Status s = OpenForReading(path + ".1", &old); !s.ok()) return s;
    if (old.fd >= 0 && (from.inode == 0 || SameFile(old, from))) {
      absl::StatusOr<std::string> rest = ReadRangeFd(old.fd, path + ".1", offset, max_bytes);
      if (!rest.ok()) return rest.status();
      chunk.data = std::move(*rest);
      if (static_cast<int64_t>(chunk.data.size()) >= max_bytes) {
        // The rotated file has more; the next call goes on in it.
        chunk.next =
            LogPosition{offset + static_cast<int64_t>(chunk.data.size()), old.inode, old.born_ns};
        return chunk;
      }
    } else {
      chunk.lost = true;
    }
    offset = 0;
  }
  if (live.fd < 0) return chunk;  // next: position 0 of whichever file is live next
  const int64_t room = max_bytes - static_cast<int64_t>(chunk.data.size());
  absl::StatusOr<std::string> fresh = ReadRangeFd(live.fd, path, offset, room);
  if (!fresh.ok()) return fresh.status();
  chunk.data += *fresh;
  chunk.next = LogPosition{offset + static_cast<int64_t>(fresh->size()), live.inode, live.born_ns};
  return chunk;
}

}  // namespace coach::backend::local
