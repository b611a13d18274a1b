#pragma once

// The job's attempt timeline (status.coach.attempts): each attempt's start, when all its
// replicas ran, where they ran, when it ended and what ended it. The pass opens an attempt's
// entry when the attempt starts, notes its replicas' nodes as they are placed, and closes it
// when the job restarts or finishes. Bounded as api/v1/coach_status.h says: the first attempt
// and the latest ones.
//
// Pure: no I/O, no clock. Writes only status.coach.attempts; a pass that changes nothing else
// changes nothing here either (no step or time is written while an attempt runs, so a running
// job's status is not rewritten for it).

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// What ended an attempt.
struct AttemptEnd {
  // One word (api/v1/training_job.proto JobAttempt.reason).
  std::string reason;
  std::string message;
  // The pod that ended it, when one did: its replica name, exit code and signal come from it.
  const model::ObservedPod* pod = nullptr;
  // A replica that ended it without a pod to show (it was deleted): "worker-1".
  std::string replica;
  // The restart after it spent the budget.
  bool counted = false;
};

// At most `max` bytes of `text`, cut before a character that would not fit (UTF-8), so that the
// CRD's character limits hold too.
std::string BoundedText(const std::string& text, size_t max);

// The entry of `attempt` in status.coach.attempts, or null.
const api::v1::JobAttempt* FindAttempt(const model::JobStatus& status, int attempt);

// "worker-1": the pod's name less "<job>-", as `coach logs --replica` names it.
std::string LogReplicaName(const model::Job& job, const std::string& pod_name);

// "SIGKILL" for exit code 137 (128 + a signal's number, as a shell and the kubelet report a
// process a signal ended); "" for any other code.
std::string SignalName(int exit_code);

// The reason word for a pod that ended an attempt: OOMKilled, Evicted, Preempted, NodeLost,
// Disrupted (another disruption), or Failed.
std::string PodEndReason(const model::ObservedPod& pod);

// When the attempt running now (`attempt`) began: the restart that asked for it, else the job's
// start, else `now`.
absl::Time AttemptStart(const model::JobStatus& status, int attempt, absl::Time now);

// When every replica of the running attempt was first seen running: the stall clock's start,
// else `now` once the job is Running; nullopt before.
std::optional<absl::Time> AttemptRunningTime(const model::JobStatus& status, absl::Time now);

// What ended an attempt that fails the job with condition reason `reason` (upstream's words in
// `upstream_reason`, when a rule set them): Invalid, Stalled, DeadlineExceeded, else the first
// failed pod of `failed_type` (any type when empty) among `pods`, or Failed.
AttemptEnd FailureEnd(const std::string& reason, const std::string& upstream_reason,
                      const std::string& failed_type, const std::vector<model::ObservedPod>& pods);

// The entry of `attempt`, made (started `start`) when the status has none; older entries past
// the bound go, the first one kept.
api::v1::JobAttempt& OpenAttempt(model::JobStatus& status, int attempt, absl::Time start);

// Notes on the entry of `attempt` (opened when missing, started `start`) the nodes of its
// `pods` that have one, and `running` (every replica runs) as its running time when unset.
void NoteAttemptPods(const model::Job& job, const std::vector<model::ObservedPod>& pods,
                     int attempt, absl::Time start, std::optional<absl::Time> running,
                     model::JobStatus& status);

// Closes the entry of `attempt` at `now` with `end` and the highest step its `pods` reported
// (or the job's last progress when none of them did and it is newer than the attempt's start).
// An entry already closed stays as it is.
void CloseAttempt(const model::Job& job, const std::vector<model::ObservedPod>& pods, int attempt,
                  absl::Time start, const AttemptEnd& end, absl::Time now,
                  model::JobStatus& status);

}  // namespace coach::reconcile
