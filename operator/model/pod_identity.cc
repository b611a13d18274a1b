#include "operator/model/pod_identity.h"

#include "absl/strings/numbers.h"
#include "api/v1/kinds.h"
#include "operator/model/replicas.h"

namespace coach::model {

std::string PodLabel(const Json& pod, const std::string& key) {
  if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object()) return "";
  const Json& meta = pod["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object()) return "";
  const Json& labels = meta["labels"];
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

PodIdentity IdentifyPod(const Job& job, const Json& pod) {
  PodIdentity id;
  int number = 0;
  if (job.kind() == api::v1::TRAIN_JOB) {
    id.replica_type = PodLabel(pod, kLabelReplicatedJob);
    if (absl::SimpleAtoi(PodLabel(pod, kLabelCompletionIndex), &number)) id.index = number;
  } else {
    const std::string label = PodLabel(pod, reconcile::kLabelReplicaType);
    id.replica_type = api::v1::CanonicalReplicaType(job.kind(), label);
    if (id.replica_type.empty()) id.replica_type = label;
    if (absl::SimpleAtoi(PodLabel(pod, reconcile::kLabelReplicaIndex), &number)) id.index = number;
  }
  if (absl::SimpleAtoi(PodLabel(pod, kLabelAttempt), &number) && number >= 0) id.attempt = number;
  return id;
}

}  // namespace coach::model
