#include "operator/core/checkpoint_notice.h"

#include <spdlog/spdlog.h>

#include "operator/reconcile/conditions.h"

namespace coach::core {

std::optional<model::ObservedCheckpoint> ObservedCheckpointOf(
    const backend::CheckpointChannel& channel, const std::string& job_uid) {
  absl::StatusOr<backend::CheckpointState> state = channel.NewestCheckpoint(job_uid);
  if (!state.ok()) return std::nullopt;
  model::ObservedCheckpoint checkpoint;
  checkpoint.id = state->id;
  checkpoint.deadline = state->deadline;
  for (const auto& [pod, answer] : state->answers) {
    checkpoint.answers[pod] = {answer.saved, answer.step, answer.message};
  }
  return checkpoint;
}

void AskForCheckpoint(backend::CheckpointChannel& channel, const model::Job& job,
                      const model::ReconcileResult& result, bool held, int attempt_before) {
  const std::string& uid = job.metadata().uid();
  if (result.request_checkpoint.has_value()) {
    absl::StatusOr<int64_t> id = channel.RequestCheckpoint(uid, *result.request_checkpoint);
    if (!id.ok()) {
      spdlog::warn("job {}/{}: checkpoint request not made: {}", job.metadata().namespace_(),
                   job.metadata().name(), id.status().ToString());
    }
    return;
  }
  if (held &&
      (job.status().coach().attempt() != attempt_before || reconcile::IsFinished(job.status()))) {
    channel.ForgetCheckpoints(uid);
  }
}

}  // namespace coach::core
