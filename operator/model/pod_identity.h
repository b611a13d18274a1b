#pragma once

// Which replica of which attempt a pod is, read from its labels the same way for every kind and
// by every backend: a kubeflow.org/v1 pod by upstream's training.kubeflow.org/replica-type and
// replica-index, a TrainJob's by JobSet's replicated-job name and the Job controller's completion
// index; the attempt of a job-scoped job by coach.dev/attempt. The reconciler writes these
// labels; a backend only reads them.

#include <string>

#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::model {

// The attempt a pod of a job-scoped job (and every TrainJob pod) was created for.
inline constexpr char kLabelAttempt[] = "coach.dev/attempt";
// A TrainJob's pods (JobSet's and the Job controller's labels): the replicated job, which is the
// job model's replica type, and the completion index.
inline constexpr char kLabelReplicatedJob[] = "jobset.sigs.k8s.io/replicatedjob-name";
inline constexpr char kLabelCompletionIndex[] = "batch.kubernetes.io/job-completion-index";

struct PodIdentity {
  // As the job's spec keys it ("Worker", or a replicated job's name); a v1 type the kind does
  // not know keeps the label's spelling, so that it stays visible.
  std::string replica_type;
  int index = 0;
  // 0 without the label, or when it is not a number >= 0 (an edited pod must not fail here).
  int attempt = 0;
};

// `pod`: the Pod object (its metadata.labels are read; anything else is ignored).
PodIdentity IdentifyPod(const Job& job, const Json& pod);

}  // namespace coach::model
