#pragma once

// Kubernetes strategic merge patch over JSON values, as much of it as TrainJob runtimePatches
// reach (JobSet spec, Job and Pod templates): objects merge key by key, a null deletes the key,
// lists of objects with a merge key (replicatedJobs, containers and env by name, volumeMounts
// by mountPath, ports by containerPort, ...) merge element by element, any other list is
// replaced whole.

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"

namespace coach::trainer {

// Merges `patch` into `base` in place. `path` names `patch` in error messages (for example
// "spec.runtimePatches[0].trainingRuntimeSpec.template.spec").
// Errors (InvalidArgument, naming the field):
//  - a replicatedJob, container or initContainer that `base` lacks (upstream's webhook refuses
//    these: a patch adds no Job and no container);
//  - an element of a keyed list without its key, or whose key is not a string or number;
//  - patch directives (`$patch`, `$retainKeys`, `$setElementOrder/...`, ...), not supported;
//  - a patch that is not an object where `base` is one is simply a replacement, not an error.
absl::Status StrategicMerge(nlohmann::json& base, const nlohmann::json& patch,
                            const std::string& path);

}  // namespace coach::trainer
