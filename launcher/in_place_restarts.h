#pragma once

// In-place restarts: when the operator restarts a whole job (COACH_RESTART_MODE=InPlace,
// restart_mode.h), coach-launch restarts its ranks inside the pod rather than the pod being
// recreated. The contract with the operator is api/v1/training_service.proto's LaunchState
// (what the workers do, in every progress report) and LaunchDirective (the operator's word, in
// every answer).
//
// For attempt A (the first: COACH_ATTEMPT), the loop
//   - reports {A, RUNNING} and runs the workers (AttemptRunner) with COACH_ATTEMPT=A and
//     TORCHELASTIC_RESTART_COUNT=A;
//   - all exit 0: exit code 0; the launcher got SIGTERM/SIGINT: the supervisor's code
//     (128+signal), without waiting for the operator;
//   - a directive with an attempt above A while they run: every worker is stopped as on a
//     failure (supervisor.h), then {A, STOPPED} is reported;
//   - a worker failed with code C: {A, FAILED, C} is reported;
// then waits for the operator's word in the answers to the reports of that state (one every
// 500 ms, progress_reporter.h):
//   - `exit`: exit with C (143 when STOPPED);
//   - `start` with an attempt B > A: the loop goes on with A = B;
//   - an answer without a directive (the operator does not restart this job in place), or an
//     operator that takes no reports: exit with C at once;
//   - SIGTERM/SIGINT: exit with 128+signal at once;
//   - neither `start` nor `exit` within `wait` (COACH_IN_PLACE_WAIT): exit with C, so that the
//     pod fails and the operator recreates it.
// Each transition is one line in `log`.

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "launcher/attempt_runner.h"
#include "launcher/progress_reporter.h"

namespace coach::launcher {

struct InPlaceRestartOptions {
  int first_attempt = 0;
  absl::Duration wait = absl::Seconds(60);
  // How often waiting looks at the operator's answers (and, between, for signals).
  absl::Duration poll = absl::Milliseconds(100);
  std::function<void(const std::string& line)> log;  // default: a line on stderr
  Clock* clock = Clock::Real();                      // not owned
};

// Returns the launcher's exit code. `reporter` is started and outlives the call; its launch
// answer callback is this call's while it runs. Errors: the runner's.
absl::StatusOr<int> RunInPlace(AttemptRunner& runner, ProgressReporter& reporter,
                               const InPlaceRestartOptions& options);

}  // namespace coach::launcher
