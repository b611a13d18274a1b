#pragma once

// Per-framework wiring of a replica's pod template: the environment upstream v1.9.4
// gives each kind's containers (kubeflow-v1.md, "Environment wiring per framework").
// One function per framework, each in its own file; SetClusterSpec dispatches.
//
// Every address written goes through `plan` (model::AddressPlan), never a literal
// service name, so a non-Kubernetes backend sees a consistent cluster.
//
// Each function appends to `pod_template.spec.containers[*].env` (upstream appends and
// does not deduplicate). Errors: NotFound when a port the wiring requires is missing
// (e.g. a PyTorchJob Master without `pytorchjob-port`), InvalidArgument on a template
// that is not an object.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "operator/model/address_plan.h"
#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

struct ReplicaRef {
  const model::Job& job;
  std::string type;  // CamelCase: "Worker"
  int index = 0;
  const model::AddressPlan& plan;
};

absl::Status SetPyTorchEnv(const ReplicaRef& replica, model::Json& pod_template);
absl::Status SetTensorFlowEnv(const ReplicaRef& replica, model::Json& pod_template);
absl::Status SetXGBoostEnv(const ReplicaRef& replica, model::Json& pod_template);
absl::Status SetPaddleEnv(const ReplicaRef& replica, model::Json& pod_template);
absl::Status SetJaxEnv(const ReplicaRef& replica, model::Json& pod_template);

// TF_CONFIG for one replica as upstream serialises it (key order included). Exposed for
// tests and for the local backend's diagnostics.
absl::StatusOr<std::string> TFConfigJson(const ReplicaRef& replica);

// Dispatches on the job's kind. MPIJob is wired in mpi_objects.h instead (OK here).
absl::Status SetClusterSpec(const ReplicaRef& replica, model::Json& pod_template);

}  // namespace coach::reconcile
