#pragma once

// The objects a job needs on a cluster, built exactly as upstream v1.9.4 builds them.
// Pure: a function of the (already defaulted) job and the operator's config.

#include "absl/status/statusor.h"
#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// The pod of replica `type`/`index`: the template with every field kept, name,
// namespace, labels (template's merged with the operator's), owner reference, the
// replica's restartPolicy (ExitCode -> Never), framework env, gang decorations.
absl::StatusOr<model::KubeObject> DesiredPod(const model::Job& job, const std::string& type,
                                             int index, const model::ReconcileConfig& config);

// A pod built elsewhere (a TrainJob's, operator/reconcile/train_job_plan.h) given what coach adds
// to every replica: MLflow env, coach-launch, progress reporting, the attempt under job-scoped
// restarts, Karpenter placement; an elastic TrainJob's node pods their elastic torchrun env
// (train_job_elastic.h). Errors as PlaceForKarpenter's.
absl::Status DecoratePlannedPod(const model::Job& job, const std::string& type, int index,
                                const model::ReconcileConfig& config, model::KubeObject& pod);

// The headless Service of replica `type`/`index`: clusterIP None, selecting the pod's
// operator labels, exposing the default container's named ports (sorted by name).
absl::StatusOr<model::KubeObject> DesiredService(const model::Job& job, const std::string& type,
                                                 int index);

}  // namespace coach::reconcile
