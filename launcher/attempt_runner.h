#pragma once

// AttemptRunner: what coach-launch's in-place restarts (in_place_restarts.h) do with processes
// and signals, behind an interface so that the restart loop is tested without either.

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launcher/supervisor.h"

namespace coach::launcher {

class AttemptRunner {
 public:
  virtual ~AttemptRunner() = default;

  // Runs the workers of `attempt` to their end (supervisor.h), stopping them all once `stop` is
  // requested. Errors: Supervise's.
  virtual absl::StatusOr<SupervisionResult> Run(int attempt, const StopRequest& stop) = 0;

  // Waits at most `timeout` for SIGTERM or SIGINT to the launcher; the signal, or 0.
  virtual int WaitForSignal(absl::Duration timeout) = 0;
};

// `spec` for `attempt`: COACH_ATTEMPT and TORCHELASTIC_RESTART_COUNT (torchrun's count of the
// restarts before this one) set to it, whatever the pod's environment said.
WorkerSpec ForAttempt(WorkerSpec spec, int attempt);

// Supervise()s `workers` (ForAttempt each) with `options` (its `stop` is set per attempt), and
// calls `attempt_ended` (when set) once every worker of an attempt exited: the workers' output
// streams outlive attempts, and the next attempt's lines must start lines of their own. The
// calling thread must block SIGTERM and SIGINT, as the supervisor's does, so that a signal
// between two attempts stays pending for WaitForSignal or the next Run.
std::unique_ptr<AttemptRunner> NewProcessAttemptRunner(std::vector<WorkerSpec> workers,
                                                       SupervisorOptions options,
                                                       std::function<void()> attempt_ended = {});

}  // namespace coach::launcher
