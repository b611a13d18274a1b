#include "operator/backend/local/process/proc_stat.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {

absl::StatusOr<ProcStat> ParseProcStat(const std::string& line) {
  size_t close = line.rfind(')');
  size_t open = line.find('(');
  if (close == std::string::npos || open == std::string::npos || close + 2 > line.size()) {
    return absl::InvalidArgumentError("malformed /proc stat line");
  }
  ProcStat st;
  if (!absl::SimpleAtoi(line.substr(0, open - 1), &st.pid)) {
    return absl::InvalidArgumentError("malformed pid in /proc stat line");
  }
  std::vector<std::string> f = absl::StrSplit(line.substr(close + 2), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 20 || f[0].empty()) {
    return absl::InvalidArgumentError("short /proc stat line");
  }
  st.state = f[0][0];
  if (!absl::SimpleAtoi(f[1], &st.ppid) || !absl::SimpleAtoi(f[2], &st.pgrp) ||
      !absl::SimpleAtoi(f[3], &st.session) || !absl::SimpleAtoi(f[19], &st.start_time)) {
    return absl::InvalidArgumentError("bad numbers in /proc stat line");
  }
  return st;
}

absl::StatusOr<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return absl::NotFoundError("no process with pid <= 0");
  absl::StatusOr<std::string> line = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!line.ok()) {
    if (absl::IsNotFound(line.status())) {
      return absl::NotFoundError(absl::StrCat("no process ", pid));
    }
    // ESRCH shows up as a read error when the process exits mid-read.
    return absl::NotFoundError(
        absl::StrCat("process ", pid, " unreadable: ", line.status().message()));
  }
  absl::StatusOr<ProcStat> st = ParseProcStat(*line);
  if (!st.ok()) return absl::InternalError(st.status().message());
  return st;
}

bool IsSameLiveProcess(pid_t pid, uint64_t start_time) {
  absl::StatusOr<ProcStat> st = ReadProcStat(pid);
  return st.ok() && st->state != 'Z' && st->start_time == start_time;
}

std::vector<ProcStat> ListProcesses() {
  std::vector<ProcStat> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (struct dirent* e = readdir(dir)) {
    pid_t pid;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    absl::StatusOr<ProcStat> st = ReadProcStat(pid);
    if (st.ok()) out.push_back(*st);
  }
  closedir(dir);
  return out;
}

std::vector<pid_t> ListGroupMembers(pid_t pgrp, pid_t session) {
  std::vector<pid_t> out;
  for (const ProcStat& st : ListProcesses()) {
    if (st.state != 'Z' && st.pgrp == pgrp && st.session == session) out.push_back(st.pid);
  }
  return out;
}

std::vector<ProcStat> DescendantsIn(const std::vector<ProcStat>& table, pid_t ancestor) {
  std::multimap<pid_t, const ProcStat*> children;
  for (const ProcStat& p : table) children.emplace(p.ppid, &p);
  std::vector<ProcStat> out;
  std::vector<pid_t> todo = {ancestor};
  while (!todo.empty()) {
    const pid_t parent = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      // pid 0's "children" are the kernel's roots, never a process's descendants.
      if (it->second->pid == ancestor || it->second->pid <= 0) continue;
      out.push_back(*it->second);
      todo.push_back(it->second->pid);
    }
  }
  return out;
}

bool SignalIfSame(const ProcStat& process, int sig) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, process.pid, 0));
  if (fd >= 0) {
    // The pidfd pins the process: if /proc still shows the same start time now, the
    // signal below reaches that process even if it exits and its pid is reused meanwhile.
    absl::StatusOr<ProcStat> now = ReadProcStat(process.pid);
    bool sent = false;
    if (now.ok() && now->start_time == process.start_time) {
      sent = syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0;
    }
    close(fd);
    return sent;
  }
  if (errno != ENOSYS) return false;  // ESRCH: gone already
#endif
  absl::StatusOr<ProcStat> now = ReadProcStat(process.pid);
  return now.ok() && now->start_time == process.start_time && kill(process.pid, sig) == 0;
}

}  // namespace coach::backend::local
