#pragma once

// Shape checks of a TrainJob and its runtime before they are merged: every field the merge
// reads is present where required and of the type it reads, so the merge itself never meets
// a malformed value. Each error is InvalidArgument and names the field.

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"

namespace coach::trainer {

// metadata.name (an RFC 1035 label of at most 63 characters), metadata.namespace,
// spec.runtimeRef (name; apiGroup trainer.kubeflow.org; kind TrainingRuntime or
// ClusterTrainingRuntime), spec.trainer (numNodes and numProcPerNode positive integers, image,
// command, args, env, resourcesPerNode), spec.initializer, spec.runtimePatches, spec.suspend.
absl::Status ValidateTrainJob(const nlohmann::json& train_job);

// `runtime` is the object spec.runtimeRef names (kind, metadata.name, and for a
// TrainingRuntime the TrainJob's namespace), with spec.mlPolicy (at most one framework) and
// spec.template.spec.replicatedJobs.
absl::Status ValidateRuntime(const nlohmann::json& train_job, const nlohmann::json& runtime);

// Each replicated job of a JobSet spec (at `path`) has a unique name and a pod template with
// a containers list of named containers.
absl::Status ValidateReplicatedJobs(const nlohmann::json& spec, const std::string& path);

}  // namespace coach::trainer
