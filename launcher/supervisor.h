#pragma once

// Runs the worker processes of one node and turns their fate into one exit code.
//
// Each worker is fork()ed and execvpe()d directly (no shell), in its OWN process group
// (pgid = its pid): signals are sent to the whole group, so helpers a worker spawns
// (data-loader processes, a wrapper shell's children) are stopped too, and a terminal's
// Ctrl-C reaches the workers once, through the launcher, not twice. Each worker also gets
// PR_SET_PDEATHSIG(SIGKILL) so it dies with the launcher even if the launcher is SIGKILLed.
//
// Policy:
//  - SIGTERM/SIGINT received by the launcher are forwarded to every running group, each
//    followed by SIGCONT so that a stopped worker acts on it at once; after `grace_period` the
//    survivors get SIGKILL.
//  - The first worker to fail (non-zero exit, or killed by signal n: code 128+n) makes the
//    launcher stop the others the same way (SIGTERM and SIGCONT, grace, SIGKILL).
//  - A StopRequest made from another thread (an in-place restart of the whole job) stops every
//    worker the same way; the exits that follow are no failure.
//  - A signal asked for through WorkerSignals from another thread (a checkpoint request's
//    SIGUSR1) goes to one worker's own process, not its group, and only while that worker runs
//    as the process id given: never to a process the launcher did not start, nor to the pid of a
//    worker that exited (it may be another process's by then). Not while the workers stop.
//  - With a SignalHold, the first SIGTERM may be held back from the workers for a while
//    (notice_hold.h: a checkpoint first); the workers run on meanwhile, and it is passed on when
//    the hold ends, at once on a second SIGTERM or a SIGINT.
//  - Exit code: the first failing worker's code; else 128+signal when the launcher itself
//    passed a signal on; else 143 (SIGTERM's) when stopped on request; else 0.
//  - One line per worker exit goes to `log`: rank, local rank, pid, code or signal, duration.
// A worker whose program cannot be executed exits 127 (not found) or 126 (other exec error)
// after printing why on its stderr.

#include <signal.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "launcher/launch_config.h"

namespace coach::launcher {

struct WorkerSpec {
  int rank = 0;
  int local_rank = 0;
  std::vector<std::string> argv;  // non-empty; argv[0] is looked up in the launcher's PATH
  EnvMap env;                     // the worker's complete environment
  int stdout_fd = -1;             // >= 0: becomes the worker's stdout (output_forwarder.h)
  int stderr_fd = -1;             // >= 0: becomes the worker's stderr
};

struct WorkerExit {
  int rank = 0;
  int local_rank = 0;
  int exit_code = 0;    // 128+n when killed by signal n
  int term_signal = 0;  // n, or 0 when it exited
  absl::Duration duration;
};

struct SupervisionResult {
  int exit_code = 0;
  int received_signal = 0;  // first SIGTERM/SIGINT the launcher got, or 0
  // The workers were stopped by a StopRequest before any failed.
  bool stopped_on_request = false;
  std::vector<WorkerExit> exits;  // in the order they were reaped
};

// Asks a running Supervise, from another thread, to stop every worker. Thread-safe.
class StopRequest {
 public:
  // The first call wins. `why` begins the supervisor's line
  // "coach-launch: <why>; stopping N worker(s) (grace D)".
  void Request(const std::string& why);
  // The reason, once requested.
  std::optional<std::string> Requested() const;

 private:
  mutable absl::Mutex mu_;
  std::optional<std::string> why_ ABSL_GUARDED_BY(mu_);
};

// Signals for single workers, asked for from other threads and sent by a running Supervise
// (see the policy above) within its `stop_poll`; asked for between two Supervise calls, they
// are looked at by the next one. Thread-safe.
class WorkerSignals {
 public:
  struct Pending {
    int local_rank = 0;
    pid_t pid = 0;
    int signal = 0;
    std::string why;  // for the supervisor's line about it
  };
  void Send(int local_rank, pid_t pid, int signal, std::string why);
  std::vector<Pending> Take();

 private:
  absl::Mutex mu_;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
};

// Whether a signal the launcher got goes to the workers at once or later. Called on the
// supervisor's thread.
class SignalHold {
 public:
  virtual ~SignalHold() = default;
  // The launcher got `sig` (the first time): nullopt passes it on now; otherwise why it is held,
  // for the supervisor's line.
  virtual std::optional<std::string> Begin(int sig) = 0;
  // Looked at every `stop_poll` while a signal is held: false passes it on.
  virtual bool Holding() = 0;
};

struct SupervisorOptions {
  absl::Duration grace_period = absl::Seconds(30);
  std::function<void(const std::string&)> log;  // default: a line on stderr
  // The signal mask workers start with; null: the caller's mask at the call. A launcher that
  // blocked SIGCHLD/SIGTERM/SIGINT before starting threads passes its original mask here.
  const sigset_t* child_mask = nullptr;
  // Not owned; may be null. Looked at every `stop_poll` while the workers run (a signal wait
  // cannot also wait for another thread), so it takes effect within that.
  const StopRequest* stop = nullptr;
  // Not owned; may be null. Looked at like `stop`.
  WorkerSignals* signals = nullptr;
  // Not owned; may be null (every signal passes at once).
  SignalHold* hold = nullptr;
  absl::Duration stop_poll = absl::Milliseconds(100);
};

// Starts every worker and returns once all have exited. Blocks SIGCHLD, SIGTERM and SIGINT
// in the calling thread while it runs (restoring the mask after), so call it from the main
// thread of a single-threaded process. Errors: InvalidArgument for an empty spec list or argv;
// Internal when signals cannot be set up. A fork() failure stops the started workers and
// yields exit code 1, not an error.
absl::StatusOr<SupervisionResult> Supervise(const std::vector<WorkerSpec>& workers,
                                            const SupervisorOptions& options);

}  // namespace coach::launcher
