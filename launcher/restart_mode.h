#pragma once

// How the job restarts, as the operator tells coach-launch in the pod's environment:
//   COACH_RESTART_MODE   Recreate (or unset, or empty): a failed pod is replaced by a new one;
//                        InPlace: the ranks restart inside their pods (in_place_restarts.h),
//                        when progress reporting is configured (progress_reporter.h)
//   COACH_ATTEMPT        InPlace: the job's attempt the pod starts in, 0..1000000 (default 0)
//   COACH_IN_PLACE_WAIT  InPlace: seconds (> 0, fractions allowed; default 60) to wait for the
//                        operator's word after the workers failed or were stopped
// In Recreate mode the other two are not read here (worker_env.h reads COACH_ATTEMPT as
// before).

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launcher/launch_config.h"

namespace coach::launcher {

enum class RestartMode { kRecreate, kInPlace };

struct RestartConfig {
  RestartMode mode = RestartMode::kRecreate;
  int attempt = 0;
  absl::Duration in_place_wait = absl::Seconds(60);
};

inline constexpr int kMaxAttempt = 1000000;

// Errors: InvalidArgument naming the variable and what it may be.
absl::StatusOr<RestartConfig> ParseRestartConfig(const EnvMap& env);

}  // namespace coach::launcher
