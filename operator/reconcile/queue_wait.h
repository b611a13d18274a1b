#pragma once

// A job Kueue holds, in words: the facts the backend observed of the job's Workload
// (model::ObservedState::Queue) become the job's Queued condition, which `coach get` shows as
// the job's state, `coach describe` with its message, and `kubectl get` in its State (v1) or
// PHASE (TrainJob: status.coach only) column. Pure.

#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// Why Kueue holds the job; "" when it does not (admitted, or no Workload facts):
//   "Waiting for quota: LocalQueue team-a -> ClusterQueue cluster-queue: couldn't assign
//    flavors to pod set node: insufficient unused quota for cpu in flavor default-flavor, 1
//    more needed"
//   "Waiting for admission checks: LocalQueue team-a -> ClusterQueue cluster-queue: <message>"
//   "Deactivated: LocalQueue team-a -> ClusterQueue cluster-queue: ..." (spec.active false)
// An unknown ClusterQueue leaves out " -> ClusterQueue ..."; an empty message its ": ...";
// an eviction of an active Workload (preemption, ...) adds "(evicted: <reason>)" after the
// queues. At most 1000 characters.
std::string QueueWaitText(const model::ObservedState::Queue& queue);

// Sets the Queued condition: True while the job is suspended and `queue` says Kueue holds it
// (reason <kind>WaitingForQuota, or <kind>WaitingForAdmission once quota is reserved; the
// message is QueueWaitText, kept current as Kueue's words change); False (reason
// <kind>Admitted) once a job that was Queued runs unsuspended. Returns the text when the job
// starts waiting (Queued turned True), for the caller's event; "" otherwise.
std::string UpdateQueued(model::JobStatus& status, std::string_view kind, bool suspended,
                         const std::optional<model::ObservedState::Queue>& queue, absl::Time now);

}  // namespace coach::reconcile
