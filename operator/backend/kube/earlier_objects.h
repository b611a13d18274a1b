#pragma once

// Pods and Services that an earlier operator (upstream's training-operator, before coach took its
// place) made for kubeflow.org/v1 jobs carry upstream's labels but not coach's job label, which
// every cache of the Kubernetes backend selects by. Labelling them once, as the leader starts,
// brings them under the one watch, so that their jobs go on under coach (upstream adopts its
// orphans the same way: by labels and owner references, never by recreating them).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::backend::kube {

struct EarlierObjectsLabelled {
  int labelled = 0;  // objects that now carry coach's job label
  int failed = 0;    // patches refused (logged); the next start tries them again
};

// Lists the Pods and Services in `namespaces` ("" = all) that carry
// training.kubeflow.org/operator-name and job-name but not coach.dev/job-name, and merge-patches
// coach.dev/job-name (the value of training.kubeflow.org/job-name) onto each. An error listing is
// returned; a failed patch is counted and the rest go on.
absl::StatusOr<EarlierObjectsLabelled> LabelEarlierOperatorObjects(
    kubeclient::KubeClient* client, const std::vector<std::string>& namespaces);

}  // namespace coach::backend::kube
