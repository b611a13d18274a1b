#pragma once

// What an interruption cost a job-scoped job (an attempt that a disruption ended: an eviction,
// a preemption, a lost node, a notice; its restart spent no budget), told once the attempt after
// it has shown where it resumed: the steps done again (JobAttempt.steps_lost), how long from the
// interruption to every replica training again, and the nodes it runs on now. Everything comes
// from status.coach.attempts; this puts it into the words of the job's InterruptionCost event.
//
// Pure: no I/O, no clock.

#include <optional>
#include <string>

#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

inline constexpr char kInterruptionCostReason[] = "InterruptionCost";

// True when the attempt before `attempt` knows its steps lost.
bool StepsLostKnown(const model::JobStatus& status, int attempt);

// The cost of the interruption that ended the attempt before `attempt`, in words, when that
// attempt was interrupted (ended, not counted) and knows its steps lost; nullopt otherwise.
std::optional<std::string> InterruptionCost(const model::JobStatus& status, int attempt);

}  // namespace coach::reconcile
