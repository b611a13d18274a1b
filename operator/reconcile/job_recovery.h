#pragma once

// The pure rules of whole-job recovery (recovery_policy.h): what, among the pods of a job's
// current attempt, calls for a restart of the whole job; when a job stalled; and how the
// replicas' progress reports become the job's status. The reconciler applies them.

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1/kinds.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

struct RestartTrigger {
  enum class Kind {
    kNone,
    // The program failed in a way its restart policy retries: a counted restart.
    kRetryable,
    // Something the program did not cause (eviction, preemption, a lost node, a deleted
    // pod): a restart that spends no budget.
    kDisruption,
    // A failure the restart policy does not retry: the job fails.
    kPermanent,
    // No progress within coach.dev/progress-deadline: a counted restart.
    kStalled,
  };
  Kind kind = Kind::kNone;
  // The replica type blamed for a counted restart ("" when none can be: a stall with no
  // stopped replica).
  std::string replica_type;
  // Replica types with a failed pod, in the job's type order (the upstream failure message).
  std::string failed_type;
  int failed_count = 0;
  // What happened, in words: "Worker replica 1 exited with code 137".
  std::string why;
  // The pod of `pods` that set it off (null for a stall, or a replica deleted); the name of the
  // deleted replica's pod.
  const model::ObservedPod* pod = nullptr;
  std::string deleted_pod;
};

// The trigger among `pods` (the job's pods of its current attempt). A disruption outranks a
// permanent failure (the peers of a rank on a lost node fail with their own errors), which
// outranks a retryable one. `attempt_running`: every replica of the attempt ran, so a replica
// missing now was deleted by someone (a disruption).
RestartTrigger FindRestartTrigger(const model::Job& job,
                                  const std::vector<model::ObservedPod>& pods,
                                  bool attempt_running);

// The stall verdict of a running attempt.
struct StallCheck {
  bool stalled = false;
  // When the job stalls if nothing is reported before (only when not stalled).
  absl::Time due = absl::InfiniteFuture();
  // The replicas that stopped, in words ("Worker replica 1 (process stopped)").
  std::string who;
  // The replica type blamed ("" when none stands out).
  std::string replica_type;
};

// No progress report newer than max(`running_since`, each pod's last report) by `deadline`
// at `now`.
StallCheck CheckStall(const model::Job& job, const std::vector<model::ObservedPod>& pods,
                      absl::Time running_since, absl::Duration deadline, absl::Time now);

// Copies the newest of `pods`' progress into `status.coach.progress` when the status has none,
// or the report is `interval` newer than the status's, or `final` (the job finishes in this
// pass). Returns when the status should be brought up to date if it was not (nullopt: it is).
std::optional<absl::Time> UpdateProgressStatus(const std::vector<model::ObservedPod>& pods,
                                               absl::Duration interval, bool final,
                                               model::JobStatus& status);

}  // namespace coach::reconcile
