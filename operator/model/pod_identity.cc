#include "operator/model/pod_identity.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"
#include "operator/model/replicas.h"

namespace coach::model {
namespace {

// A pod without coach's labels: made by an earlier operator, which labelled it as upstream does.
void IdentifyByUpstreamLabels(const Job& job, const Json& pod, PodIdentity& id) {
  int number = 0;
  if (job.kind() == api::v1::TRAIN_JOB) {
    id.replica_type = LabelOf(pod, kLabelReplicatedJob);
    if (absl::SimpleAtoi(LabelOf(pod, kLabelCompletionIndex), &number)) id.index = number;
    return;
  }
  const std::string label = LabelOf(pod, reconcile::kLabelReplicaType);
  id.replica_type = api::v1::CanonicalReplicaType(job.kind(), label);
  if (id.replica_type.empty()) id.replica_type = label;
  if (absl::SimpleAtoi(LabelOf(pod, reconcile::kLabelReplicaIndex), &number)) id.index = number;
}

}  // namespace

void StampPodIdentity(const Job& job, const std::string& replica_type, int index, Json& pod) {
  if (!pod.is_object()) return;
  Json& meta = pod["metadata"];
  if (!meta.is_object()) meta = Json::object();
  Json& labels = meta["labels"];
  if (!labels.is_object()) labels = Json::object();
  labels[kLabelCoachJobName] = job.metadata().name();
  labels[kLabelCoachReplicaType] = replica_type;
  labels[kLabelCoachReplicaIndex] = absl::StrCat(index);
}

PodIdentity IdentifyPod(const Job& job, const Json& pod) {
  PodIdentity id;
  int number = 0;
  id.replica_type = LabelOf(pod, kLabelCoachReplicaType);
  if (id.replica_type.empty()) {
    IdentifyByUpstreamLabels(job, pod, id);
  } else if (absl::SimpleAtoi(LabelOf(pod, kLabelCoachReplicaIndex), &number) && number >= 0) {
    id.index = number;
  }
  if (absl::SimpleAtoi(LabelOf(pod, kLabelAttempt), &number) && number >= 0) id.attempt = number;
  return id;
}

}  // namespace coach::model
