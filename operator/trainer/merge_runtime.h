#pragma once

// The pure half of Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1, upstream v2.3.0): a
// TrainJob and the TrainingRuntime or ClusterTrainingRuntime it names become the JobSet that
// upstream's trainer would apply. Behaviour: shared/reference/kubeflow-v2.md sections 3 and 5.

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace coach::trainer {

inline constexpr char kAncestorLabel[] = "trainer.kubeflow.org/trainjob-ancestor-step";
inline constexpr char kAncestorTrainer[] = "trainer";
inline constexpr char kAncestorDatasetInitializer[] = "dataset-initializer";
inline constexpr char kAncestorModelInitializer[] = "model-initializer";
// The container the trainer's settings and framework env go to, and the job MPI calls "node".
inline constexpr char kNode[] = "node";
inline constexpr char kLauncher[] = "launcher";
inline constexpr int kTrainerPort = 29500;

struct MergedTrainJob {
  // A jobset.x-k8s.io/v1alpha2 JobSet: metadata {name, namespace, labels, annotations,
  // ownerReferences (when the TrainJob has a uid)} and spec, replicatedJobs in the runtime's
  // order, each job's parallelism and completions set to its pod count, the framework env,
  // ports and MPI volumes in place. JobSet webhook defaults are not applied here.
  nlohmann::json job_set;
  // The runtime's spec.mlPolicy with what the TrainJob decided filled in: numNodes is
  // spec.trainer.numNodes when set (else the runtime's, default 1), mpi.numProcPerNode the
  // slots per host. Null when the runtime has none.
  nlohmann::json ml_policy;
  // The runtime's spec.podGroupPolicy (null when none).
  nlohmann::json pod_group_policy;
  // The replicatedJob labelled trainjob-ancestor-step=trainer.
  std::string trainer_job;
};

// `train_job`: a TrainJob as the API server holds it (CRD defaults applied); `runtime`: the
// TrainingRuntime (same namespace) or ClusterTrainingRuntime that spec.runtimeRef names.
// Errors: InvalidArgument naming the field for inputs that cannot be merged: missing or
// malformed required fields (metadata.name, metadata.namespace, spec.runtimeRef,
// spec.template.spec.replicatedJobs, ...), a runtime that is not the one referenced, no job
// labelled as the trainer, a runtimePatch naming a job or container the runtime lacks, an
// MPI implementation other than OpenMPI, an mlPolicy.flux (not supported by coach), a torch
// envInjection target that does not exist, quantities that do not parse.
absl::StatusOr<MergedTrainJob> MergeRuntime(const nlohmann::json& train_job,
                                            const nlohmann::json& runtime);

}  // namespace coach::trainer
