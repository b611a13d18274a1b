#pragma once

// The controller's side of checkpoint on notice (operator/reconcile/notice.h): what the job's
// checkpoint request and its pods' answers are, for the reconciler, and carrying out what the
// reconciler asked.

#include <optional>
#include <string>

#include "operator/backend/progress_receiver.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::core {

// The job's newest request with its answers; nullopt when it has none.
std::optional<model::ObservedCheckpoint> ObservedCheckpointOf(
    const backend::CheckpointChannel& channel, const std::string& job_uid);

// After a pass over `job` (as stored now): the request the reconciler asked for goes out; a
// request `held` before the pass is dropped once the job moved on (a later attempt, or done).
void AskForCheckpoint(backend::CheckpointChannel& channel, const model::Job& job,
                      const model::ReconcileResult& result, bool held, int attempt_before);

}  // namespace coach::core
