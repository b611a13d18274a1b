// coach-replica-shim's hold on the replica's command (replica_shim.cc): the descriptors it gets,
// its cgroup, its start in a process group of its own with the shim's signals forwarded to that
// group, and the end of every process it started. Called by the shim's main thread, in the
// order of this file.

#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "operator/backend/local/process/exit_record.h"

namespace coach::backend::local::shim {

// The command's stdin (/dev/null), its stdout and stderr (`out`), and `err`, on which the child
// says why it could not start the command. Plain descriptors: a shim that fails exits at once.
struct CommandFds {
  int null_fd = -1;
  int err[2] = {-1, -1};
  int out[2] = {-1, -1};
};

// The error's message is the exit record's.
absl::StatusOr<CommandFds> OpenCommandFds();

// The replica's cgroup, when the host lets the shim make one (`dir` empty otherwise). The child
// is created in it (`dir_fd`, clone3's CLONE_INTO_CGROUP); where the kernel cannot, it is forked
// and moved, and waits on `go` until it is in it, so that nothing it starts can begin outside.
struct Cgroup {
  std::string dir;
  int dir_fd = -1;
  int go[2] = {-1, -1};
};

// Named after the shim (`shim`: its pid and start time).
Cgroup MakeReplicaCgroup(const ProcessFile& shim, Clock* clock);

// SIGCHLD, blocked in the shim from StartCommand on: the shim reads it from a signalfd.
sigset_t ChildEnded();

// Forks the command's process, which waits for `cgroup` and execs `command` (looked up in the
// PATH of the environment passed on) in `cwd` (empty: the shim's). Returns its pid, also its
// group's, once the signals sent to the shim go to that group. `cgroup` is cleared when the
// child cannot be put in it. The error's message is the exit record's.
absl::StatusOr<pid_t> StartCommand(const std::string& cwd, std::vector<std::string>* command,
                                   const CommandFds& fds, Cgroup* cgroup, Clock* clock);

// Why the command did not start; an empty message when it did.
struct StartError {
  int exit_code = 0;  // 127: not found; 126: not executable, or no `cwd`
  std::string message;
};

// Closes the shim's copies of what the child got, so that the output pipe ends with the
// replica's writers, then reads what the child said: nothing when exec succeeded.
StartError AwaitStart(const std::string& cwd, const std::string& file, const CommandFds& fds);

// After the command ended: kills its group, `cgroup` and every process still descended from the
// shim, until none is left or a few seconds passed. Signals are no longer forwarded.
void KillReplica(pid_t child, const std::string& cgroup, Clock* clock);

}  // namespace coach::backend::local::shim
