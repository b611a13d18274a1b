#pragma once

// Recovery as a decision, apart from the pass that applies it: given the job (as its plan
// expands it), the recovery policy it asks for (recovery_policy.h), what the backend observed,
// the job's status as the pass has it so far and the time, it says which pods belong to the
// attempt running now, whether the whole job restarts (in place or by recreating its pods) or
// fails, whether it stalled, which pods on lost nodes are force-deleted, and whether the
// replicas' own restarts spent their budget. The rules themselves are job_recovery.h's.
//
// Pure: no I/O, no clock. `job`, `observed`, `config` and the status must outlive it; the
// status is read live, so decisions see what the pass wrote before asking.

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"
#include "operator/reconcile/attempt_history.h"
#include "operator/reconcile/recovery_policy.h"

namespace coach::reconcile {

// What to do about the job's current attempt.
struct RecoveryDecision {
  enum class Kind { kNone, kRestart, kFail };
  Kind kind = Kind::kNone;
  // kRestart: the whole job starts a new attempt. `counted`: it spends the budget (a failure
  // or a stall), not a disruption; `replica_type` is charged ("" for none).
  bool counted = false;
  std::string replica_type;
  std::string why;
  // kFail: the condition's reason and message; the replica type whose failure failed the job
  // (""); JobSet's reason when the job ran out of restarts (for JobSet's words).
  std::string reason;
  std::string message;
  std::string failed_type;
  std::string upstream_reason;
  // What ends the current attempt, for its entry in the timeline (attempt_history.h): its
  // reason, the pod that set it off; the message and `counted` are the pass's to fill.
  AttemptEnd end;
};

class Recovery {
 public:
  Recovery(const model::Job& job, const RecoveryPolicy& policy,
           const model::ObservedState& observed, const model::JobStatus& status, absl::Time now,
           const model::ReconcileConfig& config);

  // Job scope: the attempt is the status's, or a later one the pods carry (the status write of
  // a restart lost after its deletes). Fixes the attempt and the current pods; before it, every
  // rule reads attempt 0.
  void FindAttempt();
  int attempt() const { return attempt_; }

  const RecoveryPolicy& policy() const { return policy_; }
  bool JobScope() const { return policy_.scope == RestartScope::kJob; }
  // Restarts in place: job scope, coach.dev/restart-mode InPlace, and the operator takes the
  // reports through which the pods' coach-launch hears of a restart.
  bool InPlace() const;
  // A pod of an earlier attempt of a job-scoped job: it goes before the next attempt starts,
  // unless its coach-launch carries it into the next attempt (InPlaceMember).
  bool Stale(const model::ObservedPod& pod) const;
  // A pod whose coach-launch restarts its ranks in place: it outlives attempts, running, and
  // also once it ended in the attempt its launcher carried it into.
  bool InPlaceMember(const model::ObservedPod& pod) const;
  // The pod as the current attempt sees it: an in-place member between attempts is Pending,
  // one whose workers failed in this attempt is Failed with their code.
  model::ObservedPod AsOfAttempt(const model::ObservedPod& pod) const;
  // The pods of the attempt running now (every pod outside Job scope), as of the attempt, with
  // no report from the future; set by FindAttempt.
  const std::vector<model::ObservedPod>& current() const { return current_; }
  // Every replica is one in-place member running the current attempt's ranks: a restart can be
  // made in place. Otherwise `why_not` says what stands in the way.
  bool InPlaceReady(std::string& why_not) const;
  // No rank of an attempt before `attempt` runs any more: the ranks of `attempt` may start.
  bool InPlaceReleased(int attempt) const;
  // A pod of an earlier attempt is still there or, in place, still runs its ranks: nothing of
  // the next attempt starts yet (a new rank must never meet an old one at the rendezvous).
  bool PreviousAttemptLeft() const;
  // Every replica of the current attempt ran (status.coach.attemptRunningTime).
  bool AttemptRunning() const;

  // Pods going away on a lost node past `lost_node_grace`: force-deleted so that their
  // replacements (same names) can start. `requeue` moves to when the next one is due.
  std::vector<const model::ObservedPod*> LostPodsToForceDelete(
      std::optional<absl::Time>& requeue) const;
  // A restart in place whose ranks did not all come back within the timeout: its pods are
  // recreated instead. `requeue` moves to when it would time out.
  bool InPlaceTimedOut(std::optional<absl::Time>& requeue) const;
  // Replica scope: the message of the budget the replicas' restarts spent (backoffLimit or
  // coach.dev/max-restarts, a type's own), or "".
  std::string ReplicaBudgetSpent() const;
  // Job scope: what a trigger among the current attempt's pods, or a stall, makes of the job.
  // `running`: the job's Running condition is true.
  RecoveryDecision DecideJobScope(bool running, std::optional<absl::Time>& requeue) const;
  // Replica scope: a stall fails the job (restarting one replica of a hung collective does not
  // help).
  RecoveryDecision DecideReplicaScopeStall(bool running, std::optional<absl::Time>& requeue) const;
  // The attempt runs now (every replica running): true when the status should record it.
  // `requeue` moves to when a stall would be due if no replica ever reports.
  bool AttemptStartsRunning(std::optional<absl::Time>& requeue) const;

 private:
  // Where a stall's no-progress time starts: when the attempt ran, or when the backend began to
  // know reports (an operator that just started has heard none yet), whichever is later.
  absl::Time StallClockStart() const;

  const model::Job& job_;
  const RecoveryPolicy policy_;
  const model::ObservedState& observed_;
  const model::JobStatus& status_;
  absl::Time now_;
  const model::ReconcileConfig& config_;
  std::string kind_name_;
  int attempt_ = 0;
  std::vector<model::ObservedPod> current_;
};

// Moves `requeue` to `at` when that is earlier.
void RequeueBy(std::optional<absl::Time>& requeue, absl::Time at);

// Records a whole-job restart in coach's status (the next attempt, its time, the budget spent
// or the disruption counted) and returns its words for the Restarting condition and the event.
// `in_place`: the ranks restart inside their pods; otherwise `not_in_place` says why not ("").
std::string RecordRestart(const RecoveryDecision& restart, int attempt, bool in_place,
                          const std::string& not_in_place, const RecoveryPolicy& policy,
                          const std::string& kind_name, const std::string& job_name, absl::Time now,
                          model::JobStatus& status);

}  // namespace coach::reconcile
