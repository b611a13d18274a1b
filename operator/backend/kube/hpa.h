#pragma once

// The autoscaling/v2 HorizontalPodAutoscaler of an elastic PyTorchJob, as upstream's PyTorchJob
// controller makes it (training-operator v1.9 pkg/controller.v1/pytorch/hpa.go): named and
// namespaced as the job, controlled by it, scaling the job's scale subresource (its Workers:
// charts/coach/crds/kubeflow.org_pytorchjobs.yaml) between elasticPolicy.minReplicas and
// maxReplicas on elasticPolicy.metrics. Pure: what a job should have and which step takes the
// cached HPA there; KubeBackend takes the step (kube_backend_hpa.cc).

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "operator/backend/kube/client/resource.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend::kube {

inline constexpr char kHpaKind[] = "HorizontalPodAutoscaler";

// horizontalpodautoscalers.autoscaling, v2 (served since Kubernetes 1.23).
coach::kubeclient::ResourceDescriptor HorizontalPodAutoscalers();

// Whether the backend looks after `job`'s HPA now: a PyTorchJob (upstream makes none for other
// kinds) with a uid, not being deleted, not finished, and managed by coach (runPolicy.managedBy
// unset or kubeflow.org/training-operator). Otherwise its HPA stays as it is; the garbage
// collector deletes it with the job.
bool TendsHpa(const model::Job& job);

// The HPA `job` should have, complete as it is created: apiVersion autoscaling/v2, kind,
// metadata {name, namespace, labels {coach.dev/job-name}, ownerReferences (the job, controller)},
// spec {scaleTargetRef {apiVersion kubeflow.org/v1, kind PyTorchJob, name}, minReplicas,
// maxReplicas, metrics}, with minReplicas and maxReplicas as defaulting leaves them
// (api/v1/defaults.h). nullopt: none, because the job has no elasticPolicy.metrics (an empty
// list is metrics: the API server then defaults them to CPU at 80%, as upstream's HPA gets), or
// it is suspended (upstream deletes a suspended job's HPA). InvalidArgument naming the field:
// metrics the validation refuses (api::v1::ValidateElasticMetrics) or min above max; the pass
// fails such a job, so its HPA is left as it is.
absl::StatusOr<std::optional<nlohmann::json>> DesiredHpa(const model::Job& job);

// What the backend knows of a job's HPA.
struct HpaView {
  // The cached HPA (at least metadata and spec); nullptr: none in the cache.
  const nlohmann::json* cached = nullptr;
  // A create, or a delete, was sent and the cache has not shown it yet.
  bool create_pending = false;
  bool delete_pending = false;
  // The spec the backend last wrote (dumped) and the spec the API server answered with: the
  // server defaults and normalises a spec (a quantity "0.5" comes back as "500m"), so the
  // answer stands for what was written.
  std::string written_spec;
  std::string answered_spec;
};

enum class HpaStep { kNone, kCreate, kPatch, kDelete };

// "none", "create", "patch", "delete".
const char* HpaStepName(HpaStep step);

// The step from `view` toward `desired` (nullopt: no HPA): create when there is none and none is
// being created; delete when there is one the job should not have and it is not being deleted
// already; patch when the cached spec is not the desired one (SameHpaSpec, or the server's answer
// to writing exactly this spec); else none. A desired HPA whose predecessor is still being deleted
// waits for the deletion.
HpaStep NextHpaStep(const std::optional<nlohmann::json>& desired, const HpaView& view);

// Whether two HPA specs are equal once null members (absent, to the API server) are dropped.
bool SameHpaSpec(const nlohmann::json& a, const nlohmann::json& b);

// The JSON merge patch (RFC 7386) that gives `current` the spec of `desired` and coach's job
// label: the desired spec, with null for every spec field `current` has and `desired` has not
// (a `behavior` someone added is removed, as upstream's update removes it). Lists such as metrics
// are replaced whole by a merge patch. Other metadata (labels, annotations of others) stays.
nlohmann::json HpaPatch(const nlohmann::json& desired, const nlohmann::json& current);

// Whether `object` names the job of uid `uid` as an owner: the only HPA outside coach's cache
// (one without coach's label, e.g. made by upstream's operator before coach replaced it) that
// the backend takes over.
bool OwnedByJob(const nlohmann::json& object, const std::string& uid);

}  // namespace coach::backend::kube
