#include "operator/model/pod_identity.h"

#include "absl/strings/numbers.h"
#include "api/v1/kinds.h"
#include "operator/model/replicas.h"

namespace coach::model {

PodIdentity IdentifyPod(const Job& job, const Json& pod) {
  PodIdentity id;
  int number = 0;
  if (job.kind() == api::v1::TRAIN_JOB) {
    id.replica_type = LabelOf(pod, kLabelReplicatedJob);
    if (absl::SimpleAtoi(LabelOf(pod, kLabelCompletionIndex), &number)) id.index = number;
  } else {
    const std::string label = LabelOf(pod, reconcile::kLabelReplicaType);
    id.replica_type = api::v1::CanonicalReplicaType(job.kind(), label);
    if (id.replica_type.empty()) id.replica_type = label;
    if (absl::SimpleAtoi(LabelOf(pod, reconcile::kLabelReplicaIndex), &number)) id.index = number;
  }
  if (absl::SimpleAtoi(LabelOf(pod, kLabelAttempt), &number) && number >= 0) id.attempt = number;
  return id;
}

}  // namespace coach::model
