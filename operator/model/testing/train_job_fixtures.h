#pragma once

// TrainJobs for the reconciler's tests: one on a runtime of the shared reference folder, the
// backend's view of that runtime, and a created pod as the backend would observe it.

#include <nlohmann/json.hpp>
#include <string>

#include "operator/model/kube_object.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile::testing {

// The ClusterTrainingRuntime in runtimes/<file> of the shared reference folder (a test failure
// and null when it cannot be read).
nlohmann::json ReferenceRuntime(const std::string& file);

// TrainJob ns/mnist (uid uid-1) on the ClusterTrainingRuntime `runtime`: `nodes` nodes running
// `torchrun train.py`, with `annotations` and the trainer's `env` when they are not empty.
model::Job MakeTrainJob(const std::string& runtime, int nodes,
                        const nlohmann::json& annotations = nlohmann::json::object(),
                        const nlohmann::json& env = nlohmann::json::array());

// What the backend observes of a job whose runtime is `runtime`, before any pod.
model::ObservedState ObservedWithRuntime(const nlohmann::json& runtime);

// The pod a pass created, observed in `phase`: its replicated job and completion index.
model::ObservedPod ObservedPodOf(const model::KubeObject& created, model::PodPhase phase);

}  // namespace coach::reconcile::testing
