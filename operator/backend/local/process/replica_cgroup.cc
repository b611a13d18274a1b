#include "operator/backend/local/process/replica_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/proc_stat.h"

namespace coach::backend::local {
namespace {

absl::Status FromErrno(int e, const std::string& what) {
  const std::string message = absl::StrCat(what, ": ", strerror(e));
  switch (e) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOENT:
    case ESRCH:
      return absl::NotFoundError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

// mountinfo escapes blanks and backslashes in paths as octal (\040).
std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

absl::Status WriteControl(const std::string& file, const std::string& value) {
  const int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return FromErrno(errno, absl::StrCat("open ", file));
  ssize_t n;
  do {
    n = write(fd, value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  const int write_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    return FromErrno(n < 0 ? write_errno : EIO, absl::StrCat("write ", file));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> CgroupDirFrom(const std::string& mountinfo,
                                          const std::string& proc_cgroup) {
  std::string path;
  bool found = false;
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "0::")) {
      path = std::string(line);
      found = true;
    }
  }
  if (!found || path.empty() || path[0] != '/') {
    return absl::UnavailableError("the process is in no cgroup v2 hierarchy");
  }
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    // <id> <parent> <major:minor> <root> <mount point> <options> [optional...] - <type> ...
    std::vector<absl::string_view> halves = absl::StrSplit(line, absl::MaxSplits(" - ", 1));
    if (halves.size() != 2 || !absl::StartsWith(halves[1], "cgroup2 ")) continue;
    std::vector<absl::string_view> f = absl::StrSplit(halves[0], ' ');
    if (f.size() < 5) continue;
    const std::string root = Unescape(f[3]);
    const std::string mount_point = Unescape(f[4]);
    std::string rest;
    if (root == "/") {
      rest = path;
    } else if (path == root) {
      rest = "";
    } else if (absl::StartsWith(path, root + "/")) {
      rest = path.substr(root.size());
    } else {
      continue;
    }
    if (rest == "/") rest.clear();
    return absl::StrCat(mount_point, rest);
  }
  return absl::UnavailableError(absl::StrCat("no cgroup2 mount holds cgroup ", path));
}

absl::StatusOr<std::string> OwnCgroupDir() {
  absl::StatusOr<std::string> mountinfo = ReadFile("/proc/self/mountinfo");
  if (!mountinfo.ok()) return mountinfo.status();
  absl::StatusOr<std::string> cgroup = ReadFile("/proc/self/cgroup");
  if (!cgroup.ok()) return cgroup.status();
  return CgroupDirFrom(*mountinfo, *cgroup);
}

absl::Status CreateCgroup(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0) return FromErrno(errno, absl::StrCat("mkdir ", dir));
  return absl::OkStatus();
}

absl::Status AddToCgroup(const std::string& dir, pid_t pid) {
  return WriteControl(absl::StrCat(dir, "/cgroup.procs"), absl::StrCat(pid, "\n"));
}

absl::StatusOr<std::vector<pid_t>> CgroupMembers(const std::string& dir) {
  absl::StatusOr<std::string> text = ReadFile(absl::StrCat(dir, "/cgroup.procs"));
  if (!text.ok()) return text.status();
  std::vector<pid_t> out;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    pid_t pid;
    if (absl::SimpleAtoi(line, &pid)) out.push_back(pid);
  }
  return out;
}

absl::Status KillCgroup(const std::string& dir, absl::Duration timeout, Clock* clock) {
  const absl::Time deadline = clock->Now() + timeout;
  absl::Status killed = WriteControl(absl::StrCat(dir, "/cgroup.kill"), "1");
  if (absl::IsNotFound(killed)) {
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 && errno == ENOENT) return absl::OkStatus();
  }
  // Without cgroup.kill (older kernels), each member is killed, and again, since a member may
  // fork between the listing and its signal; its children are in the cgroup too.
  const bool one_by_one = !killed.ok();
  while (true) {
    absl::StatusOr<std::vector<pid_t>> members = CgroupMembers(dir);
    if (absl::IsNotFound(members.status())) return absl::OkStatus();
    if (!members.ok()) return members.status();
    if (members->empty()) return absl::OkStatus();
    if (one_by_one) {
      for (pid_t pid : *members) kill(pid, SIGKILL);
    }
    if (clock->Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(members->size(), " process(es) left in cgroup ", dir, " after SIGKILL"));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

absl::Status RemoveCgroup(const std::string& dir, absl::Duration timeout, Clock* clock) {
  const absl::Time deadline = clock->Now() + timeout;
  while (rmdir(dir.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    if (errno != EBUSY) return FromErrno(errno, absl::StrCat("rmdir ", dir));
    if (clock->Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("cgroup ", dir, " still busy"));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return absl::OkStatus();
}

std::string ReplicaCgroupName(pid_t shim_pid, uint64_t shim_start_time) {
  return absl::StrCat("coach-replica-", shim_pid, "-", shim_start_time);
}

int RemoveStaleReplicaCgroups(const std::string& parent) {
  DIR* dir = opendir(parent.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  while (struct dirent* e = readdir(dir)) {
    absl::string_view name = e->d_name;
    if (!absl::ConsumePrefix(&name, "coach-replica-")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(name, '-');
    pid_t pid;
    uint64_t start_time;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &pid) ||
        !absl::SimpleAtoi(parts[1], &start_time) || IsSameLiveProcess(pid, start_time)) {
      continue;
    }
    // rmdir refuses (EBUSY) a cgroup that still has processes.
    if (rmdir(absl::StrCat(parent, "/", e->d_name).c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

}  // namespace coach::backend::local
