#pragma once

// Reading /proc/<pid>/stat: the facts that identify a process across operator restarts.
// A pid alone is not an identity (pids are recycled); (pid, start_time) is.

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::backend::local {

struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // 'R', 'S', 'D', 'Z' (zombie), 'T', ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  // Field 22: start time in clock ticks after boot. Never changes for a process.
  uint64_t start_time = 0;
};

// Whether the process is stopped: by a signal (SIGSTOP, SIGTSTP: 'T') or by a tracer ('t').
// It makes no progress, and acts on no signal but SIGKILL and SIGCONT, until continued.
inline bool IsStopped(const ProcStat& process) {
  return process.state == 'T' || process.state == 't';
}

// Errors: NotFound (no such process), Internal (unparsable stat line).
absl::StatusOr<ProcStat> ReadProcStat(pid_t pid);

// Parses one /proc/<pid>/stat line. The command name may contain spaces and ')' so
// fields are read after the LAST ')'. Errors: InvalidArgument.
absl::StatusOr<ProcStat> ParseProcStat(const std::string& line);

// True when `pid` exists, is not a zombie, and started at `start_time`.
bool IsSameLiveProcess(pid_t pid, uint64_t start_time);

// Every live (non-zombie) process in process group `pgrp` whose session is `session`.
std::vector<pid_t> ListGroupMembers(pid_t pgrp, pid_t session);

// Every process /proc lists now, zombies included (one that ends while it is read is left out).
std::vector<ProcStat> ListProcesses();

// The processes of `table` that descend from `ancestor` (its children, theirs, and so on),
// `ancestor` itself not included. Pure.
std::vector<ProcStat> DescendantsIn(const std::vector<ProcStat>& table, pid_t ancestor);

// Sends `sig` to `process` only while it is still that process (same pid and start time): the
// check and the signal go through a pidfd, so a pid recycled in between is never signalled.
// Returns whether it was sent. Without pidfds (kernels before 5.3) it checks and then kill()s.
bool SignalIfSame(const ProcStat& process, int sig);

}  // namespace coach::backend::local
