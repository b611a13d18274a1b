#pragma once

// Child processes of an end-to-end test: the environment they get, fork + execve with
// their output in files, bounded waits, one-shot commands, and reading /proc about any
// process (for finding leftovers and for failure messages).

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace coach::e2e {

struct CommandResult {
  int exit_code = -1;  // -1: killed (timeout) or did not exit normally (signal)
  std::string out;
  std::string err;
};

struct ProcessInfo {
  pid_t pid = 0;
  std::string cmdline;  // arguments joined by spaces
};

// The test's environment without the entries starting with any of `dropped_prefixes`
// ("COACH_": a child must see only what the fixture gives it), with `overrides`
// ("NAME=value") replacing or adding entries.
std::vector<std::string> ChildEnv(const std::vector<std::string>& overrides,
                                  const std::vector<std::string>& dropped_prefixes);

// fork + execve of argv (argv[0] a path) with `env`; stdin from the file `in` ("":
// /dev/null), stdout and stderr appended to the files `out` and `err` (created 0644). With
// `die_with_parent`, the child is SIGKILLed when this process dies (PR_SET_PDEATHSIG).
// The child's pid, or -1 when fork failed; an exec failure shows as exit status 127.
pid_t Spawn(std::vector<std::string> argv, std::vector<std::string> env, const std::string& in,
            const std::string& out, const std::string& err, bool die_with_parent);

// Waits for the child `pid` up to `timeout`: its wait status, -1 when it is not a child
// of this process, nullopt when still running.
std::optional<int> WaitPid(pid_t pid, absl::Duration timeout);

// SIGKILL the child `pid` and reap it.
void KillAndReap(pid_t pid);

// Runs argv like Spawn (dying with this process), stdout and stderr in <out_stem>.out and
// <out_stem>.err (left in place), and SIGKILLs it after `timeout` (exit_code -1 then).
CommandResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& in, const std::string& out_stem,
                         absl::Duration timeout);

// /proc/<pid>/<what> ("cmdline", "environ", "stat"); "" when unreadable.
std::string ReadProcFile(pid_t pid, const char* what);
// The state letter of /proc/<pid>/stat ('R', 'S', 'Z'...), '?' when there is none.
char ProcState(pid_t pid);

// "pid: cmdline" per process, one per line, for failure messages.
std::string DescribeProcesses(const std::vector<ProcessInfo>& processes);

}  // namespace coach::e2e
