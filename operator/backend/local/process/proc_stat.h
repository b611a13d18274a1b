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

// Errors: NotFound (no such process), Internal (unparsable stat line).
absl::StatusOr<ProcStat> ReadProcStat(pid_t pid);

// Parses one /proc/<pid>/stat line. The command name may contain spaces and ')' so
// fields are read after the LAST ')'. Errors: InvalidArgument.
absl::StatusOr<ProcStat> ParseProcStat(const std::string& line);

// True when `pid` exists, is not a zombie, and started at `start_time`.
bool IsSameLiveProcess(pid_t pid, uint64_t start_time);

// Every live (non-zombie) process in process group `pgrp` whose session is `session`.
std::vector<pid_t> ListGroupMembers(pid_t pgrp, pid_t session);

}  // namespace coach::backend::local
