#pragma once

// How a job recovers, from its annotations (validated at admission; an error names the
// annotation as "metadata.annotations[<name>]: ..."):
//
//   coach.dev/restart-scope          Replica (default: upstream's per-replica restarts) | Job:
//                                    any retryable failure of any replica, a disruption or a
//                                    stall restarts every replica together as one new attempt
//   coach.dev/max-restarts           the job's restart budget, an integer 0..1000: whole-job
//                                    restarts under Job, replica restarts (what backoffLimit
//                                    counts) under Replica. Default: runPolicy.backoffLimit;
//                                    with neither, no limit (upstream's default).
//   coach.dev/max-restarts-<type>    the same budget for the restarts one replica type caused
//                                    (<type> lowercase: max-restarts-worker)
//   coach.dev/progress-deadline      a duration (30s, 5m, 1h30m; 10s..7d): with no progress
//                                    reported for that long the job stalled: under Job it
//                                    restarts (counted), under Replica, or with no budget
//                                    left, it fails with reason Stalled
//   coach.dev/restart-mode           Recreate (default: a whole-job restart recreates every
//                                    pod) | InPlace: where every pod runs coach-launch and
//                                    reports progress, its ranks restart inside the pods (no
//                                    rescheduling), else the pods are recreated. Only under
//                                    scope Job; with restart-scope: Replica it is refused.
//
// Which failures are retryable follows upstream (restart_rule.h). Under Job, a failure the
// program did not cause (ObservedPod::disruption, a lost node) restarts without spending the
// budget. Without these annotations (and the operator's PyTorchJob default off) every
// behaviour is upstream's.

#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/recovery_annotations.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

using api::v1::kAnnotationMaxRestarts;
using api::v1::kAnnotationMaxRestartsPrefix;
using api::v1::kAnnotationProgressDeadline;
using api::v1::kAnnotationRestartMode;
using api::v1::kAnnotationRestartScope;

// The attempt, in every container of a job-scoped job (torchrun's TORCHELASTIC_RESTART_COUNT
// carries it too).
inline constexpr char kEnvAttempt[] = "COACH_ATTEMPT";
// "InPlace" in the containers of a job that restarts in place (coach-launch reads it).
inline constexpr char kEnvRestartMode[] = "COACH_RESTART_MODE";

inline constexpr int kMaxRestartsLimit = 1000;
inline constexpr absl::Duration kMinProgressDeadline = absl::Seconds(10);
inline constexpr absl::Duration kMaxProgressDeadline = absl::Hours(7 * 24);

enum class RestartScope { kReplica, kJob };

struct RecoveryPolicy {
  RestartScope scope = RestartScope::kReplica;
  // The budget; nullopt: no limit.
  std::optional<int> max_restarts;
  // Canonical replica type ("Worker") -> its budget.
  std::map<std::string, int> max_restarts_by_type;
  std::optional<absl::Duration> progress_deadline;
  // coach.dev/restart-mode: InPlace (only ever true under kJob).
  bool in_place = false;
};

// The job's policy. InvalidArgument naming the first bad annotation; a per-type budget for a
// type the job does not have is one. `config` gives the operator's default scope.
absl::StatusOr<RecoveryPolicy> ParseRecoveryPolicy(const model::Job& job,
                                                   const model::ReconcileConfig& config);

// ParseRecoveryPolicy's checks, for admission.
absl::Status ValidateRecoveryAnnotations(const model::Job& job);

// True when the job's pods carry the attempt (label and environment): job-scoped jobs only,
// so that the pods of every other job are upstream's.
bool JobScoped(const model::Job& job, const model::ReconcileConfig& config);

// True when the job's pods are told to restart in place (COACH_RESTART_MODE): job-scoped,
// InPlace, and the operator takes progress reports (the launcher's only way to hear of a
// restart).
bool RestartsInPlace(const model::Job& job, const model::ReconcileConfig& config);

}  // namespace coach::reconcile
