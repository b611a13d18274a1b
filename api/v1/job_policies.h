#pragma once

// The values of kubeflow.org/v1 policy fields (upstream v1.9.4 common_types.go and the
// TFJob/MPIJob specs), spelled once for defaulting, validation and the reconciler.

namespace coach::api::v1 {

// ReplicaSpec.restartPolicy.
inline constexpr char kRestartPolicyAlways[] = "Always";
inline constexpr char kRestartPolicyOnFailure[] = "OnFailure";
inline constexpr char kRestartPolicyNever[] = "Never";
// The pod runs with Never; a failed pod is recreated when its exit code says it was
// killed (>= 128), and fails the job otherwise.
inline constexpr char kRestartPolicyExitCode[] = "ExitCode";

// RunPolicy.cleanPodPolicy (and MPIJob's spec.cleanPodPolicy).
inline constexpr char kCleanPodPolicyNone[] = "None";
inline constexpr char kCleanPodPolicyRunning[] = "Running";
inline constexpr char kCleanPodPolicyAll[] = "All";

// TFJob spec.successPolicy: "" (the default: the chief, or worker 0) or AllWorkers.
// A TrainJob's TTL after it finished, in seconds (Trainer v2 has no such field; a v1 job's is
// runPolicy.ttlSecondsAfterFinished).
inline constexpr char kAnnotationTtlSecondsAfterFinished[] = "coach.dev/ttl-seconds-after-finished";
// A TrainJob's spec.managedBy default: the controller coach acts as for TrainJobs.
inline constexpr char kTrainJobController[] = "trainer.kubeflow.org/trainjob-controller";
inline constexpr char kSuccessPolicyDefault[] = "";
inline constexpr char kSuccessPolicyAllWorkers[] = "AllWorkers";

}  // namespace coach::api::v1
