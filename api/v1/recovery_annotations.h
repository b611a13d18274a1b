#pragma once

// The names of the per-job recovery annotations (their meaning and rules:
// operator/reconcile/recovery_policy.h), spelled once for the operator and the SDK's `coach`.

namespace coach::api::v1 {

inline constexpr char kAnnotationRestartScope[] = "coach.dev/restart-scope";
inline constexpr char kAnnotationMaxRestarts[] = "coach.dev/max-restarts";
// Followed by the lowercase replica type.
inline constexpr char kAnnotationMaxRestartsPrefix[] = "coach.dev/max-restarts-";
inline constexpr char kAnnotationProgressDeadline[] = "coach.dev/progress-deadline";
inline constexpr char kAnnotationRestartMode[] = "coach.dev/restart-mode";
// A TrainJob on a torch runtime trains on with as few as this many node pods (1 <= N <
// numNodes): coach's elastic training, where a PyTorchJob has elasticPolicy
// (operator/reconcile/elastic.h).
inline constexpr char kAnnotationElasticMinNodes[] = "coach.dev/elastic-min-nodes";

}  // namespace coach::api::v1
