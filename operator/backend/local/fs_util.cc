#include "operator/backend/local/fs_util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace coach::backend::local {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

}  // namespace

absl::Status MakeDirs(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("MakeDirs: empty path");
  // The whole path first: it usually exists or lacks only its last component, and walking
  // every component cost a mkdir call each (several per replica start).
  if (mkdir(path.c_str(), 0755) != 0) {
    if (errno == ENOENT) {
      const std::string parent = DirName(path);
      if (parent == path) return Errno("mkdir", path);
      if (absl::Status s = MakeDirs(parent); !s.ok()) return s;
      if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Errno("mkdir", path);
    } else if (errno != EEXIST) {
      return Errno("mkdir", path);
    }
  } else {
    return absl::OkStatus();
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return Errno("stat", path);
  if (!S_ISDIR(st.st_mode)) {
    return absl::InternalError(absl::StrCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomic(const std::string& path, const std::string& contents,
                             Durability durability) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("open", tmp);
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = Errno("write", tmp);
      close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (durability == Durability::kSynced && fsync(fd) != 0) {
    absl::Status s = Errno("fsync", tmp);
    close(fd);
    return s;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) return Errno("rename", tmp);
  if (durability == Durability::kCrashSafe) return absl::OkStatus();
  const std::string dir = DirName(path);
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);  // Best effort: the rename is already visible to readers.
    close(dfd);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no file ", path));
    return Errno("open", path);
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = Errno("read", path);
      close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

absl::StatusOr<int64_t> FileSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no file ", path));
    return Errno("stat", path);
  }
  return static_cast<int64_t>(st.st_size);
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsSafePathComponent(const std::string& name) {
  if (name.empty() || name.size() > 253 || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace coach::backend::local
