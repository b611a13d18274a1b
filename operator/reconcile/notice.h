#pragma once

// Checkpoint on notice (docs/recovery.md): what a job-scoped job does when a pod of its running
// attempt is about to go (ObservedPod::notice). Its ranks are asked to save a checkpoint at one
// step, the job waits for every running pod's answer or the deadline, then it restarts without
// spending its budget, so that the next attempt resumes from that step. Pure.

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

struct NoticeDecision {
  enum class Kind {
    kNone,     // no notice, or it cannot be acted on: recovery goes on as without one
    kRequest,  // ask the ranks to save a checkpoint within `grace`
    kWait,     // asked: wait for the answers until `until`
    kRestart,  // answered, or out of time: restart (not counted) because of `why`
  };
  Kind kind = Kind::kNone;
  absl::Duration grace;
  absl::Time until = absl::InfiniteFuture();
  std::string why;
  // The pod with the notice (not null unless kNone).
  const model::ObservedPod* pod = nullptr;
};

// The decision for the pods of the current attempt (`current`) of a job whose every replica ran
// (`attempt_running`). A notice is acted on when the job's pods report through coach-launch
// (ReportsProgress), or every running pod of the attempt did: pods without it would never answer.
// A pod that failed meanwhile leaves the decision to the other rules (kNone), unless it had
// answered that it saved (an evicted pod ends once its ranks have saved).
NoticeDecision DecideOnNotice(const model::Job& job, const std::vector<model::ObservedPod>& current,
                              bool attempt_running,
                              const std::optional<model::ObservedCheckpoint>& checkpoint,
                              const model::ReconcileConfig& config, absl::Time now);

}  // namespace coach::reconcile
