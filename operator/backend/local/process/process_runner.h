#pragma once

// The local backend's I/O boundary to the process table: starting replicas as
// supervised process groups that outlive the operator, and observing, signalling and
// stopping them, including ones started by an earlier operator process.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/backend/local/process/process_handle.h"

namespace coach::backend::local {

struct ProcessSpec {
  // argv[0] is looked up in the PATH of `env` (execvpe style) unless it contains '/'.
  std::vector<std::string> argv;
  // The exact environment, "NAME=value" entries; nothing is inherited from the operator.
  std::vector<std::string> env;
  // Absolute; empty means the directory of the replica's files.
  std::string working_dir;
  // Absolute; stdout and stderr are appended here. Parent directories are created.
  std::string log_path;
  // Rotation threshold for log_path (copytruncate to <log>.1); <= 0 means unbounded.
  int64_t max_log_bytes = 0;
  // Absolute, ending in '.'; names the shim's `process`, `exit` and `progress` files and the
  // replica's `heartbeat` (ReplicaFile in exit_record.h: "<dir>/<pod>." for <dir>/<pod>.exit).
  // Their directory is created when missing; those of an earlier run of the same replica
  // (kRunFileNames) are removed by Start.
  std::string replica_files;
};

enum class ProcessState {
  kRunning,
  // The command ended; exit_code/signal say how (127: not found, 126: not executable).
  kExited,
  // The supervisor is gone without an exit file (killed, machine rebooted, pid reused):
  // the replica's fate is unknown; count it as failed. Callers should Stop the handle
  // to reap whatever may be left of its group.
  kVanished,
};

struct PollResult {
  ProcessState state = ProcessState::kRunning;
  int exit_code = 0;  // kExited: the exit status, 128 + signal when signalled.
  int signal = 0;     // kExited: the signal that killed the command, else 0.
  absl::Time finished_at = absl::InfinitePast();
  std::string message;  // kExited/kVanished: why, when known.
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;

  // Starts the replica in a new session (it survives the operator's death) and returns
  // once the command was exec'd or failed to be (a failed exec is not an error here:
  // Poll reports kExited with 127/126).
  // Errors: InvalidArgument (empty argv, relative paths, replica_files not ending in '.',
  // env entry without '='),
  // Internal (directories, fork, or the shim could not start),
  // DeadlineExceeded (the shim did not report within its start timeout).
  virtual absl::StatusOr<ProcessHandle> Start(const ProcessSpec& spec) = 0;

  // Sends `sig` to the replica's process group.
  // Errors: NotFound (the replica's supervisor is not running: exited, vanished, or the
  // pid now belongs to another process; nothing is signalled), Internal (kill failed).
  virtual absl::Status Signal(const ProcessHandle& handle, int sig) = 0;

  // Observes the replica without changing it. Works for handles from an earlier runner
  // or operator process. Errors: Internal (unreadable exit file).
  virtual absl::StatusOr<PollResult> Poll(const ProcessHandle& handle) = 0;

  // SIGTERM and SIGCONT to the group (a stopped process acts on SIGTERM only once continued),
  // SIGKILL after `grace` if anything is still there; blocks until the replica ended (at most
  // grace + a few seconds) and returns the final Poll. Stopping a replica that already ended
  // is not an error; leftovers of a vanished replica's group (same group and session) are
  // killed too.
  // Errors: Internal, DeadlineExceeded (still alive after SIGKILL: unkillable D state).
  virtual absl::StatusOr<PollResult> Stop(const ProcessHandle& handle, absl::Duration grace) = 0;

  // The handle of the replica whose files `replica_files` names, from the shim's
  // `process` file: re-adoption after an operator crash between Start and persisting
  // the handle. Errors: NotFound (never started there), InvalidArgument (corrupt).
  virtual absl::StatusOr<ProcessHandle> Recover(const std::string& replica_files) = 0;

  // For a replica this runner started: a descriptor (close-on-exec, non-blocking) that
  // reads end of file once the replica's supervisor has ended, its exit recorded, so the
  // caller learns of the end at once instead of at its next Poll. -1 when there is none
  // (adopted replicas, runners without one). Handed out once; the caller closes it.
  virtual int TakeEndFd(const ProcessHandle& handle) {
    (void)handle;
    return -1;
  }
};

}  // namespace coach::backend::local
