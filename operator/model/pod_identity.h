#pragma once

// Which replica of which attempt a pod is. The plan stamps coach's identity labels on every pod
// of every kind, beside upstream's (which stay as upstream writes them); every backend reads
// them back through IdentifyPod. A pod made by an earlier operator, without coach's labels, is
// read from upstream's: a kubeflow.org/v1 pod's training.kubeflow.org/replica-type and
// replica-index, a TrainJob's JobSet replicated-job name and the Job controller's completion
// index.

#include <string>

#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::model {

// Coach's identity labels. The job's name: every object the operator creates carries it, and it
// is what the Kubernetes backend selects pods and Services by.
inline constexpr char kLabelCoachJobName[] = "coach.dev/job-name";
// The replica type as the job's spec keys it ("Worker", or a replicated job's name), and the
// replica's index within it.
inline constexpr char kLabelCoachReplicaType[] = "coach.dev/replica-type";
inline constexpr char kLabelCoachReplicaIndex[] = "coach.dev/replica-index";
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

// Writes coach's job name, replica type and index labels into `pod`'s metadata.labels
// (replacing any a template set).
void StampPodIdentity(const Job& job, const std::string& replica_type, int index, Json& pod);

// `pod`: the Pod object (its metadata.labels are read; anything else is ignored).
PodIdentity IdentifyPod(const Job& job, const Json& pod);

}  // namespace coach::model
