#pragma once

// Gang scheduling: the PodGroup named after the job and the pod decorations that tie
// pods to it, for Volcano (scheduling.volcano.sh/v1beta1) and scheduler-plugins
// (scheduling.x-k8s.io/v1alpha1).

#include <optional>
#include <string>

#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

inline constexpr char kVolcanoSchedulerName[] = "volcano";

// "PodGroup" with the api version of config.gang_scheduler; nullopt when gang
// scheduling is off. minMember = schedulingPolicy.minAvailable or total replicas;
// minResources = schedulingPolicy.minResources, else PodGroupMinResources (upstream v1.9
// ReconcileJobs and calcPGMinResources, for both schedulers). Volcano's queue defaults to
// "default".
std::optional<model::KubeObject> DesiredPodGroup(const model::Job& job,
                                                 const model::ReconcileConfig& config);

// Upstream's calcPGMinResources: the resources of the first `min_member` pods, each pod's
// containers adding their requests (their limits when they have no requests; init
// containers not counted), quantities in Kubernetes' canonical form ({} when none).
// Upstream takes replica types in descending PriorityClass value, read from the cluster;
// a pure reconciler cannot read it, so types come in the kind's order (Master, Chief,
// Launcher first): the same sum whenever min_member covers every pod (the default) or the
// types share a priority, where upstream's own order is Go's random map order.
model::Json PodGroupMinResources(const model::Job& job, int min_member);

// Sets schedulerName when the template has none, and the group annotations (Volcano)
// or label (scheduler-plugins). No-op when gang scheduling is off.
void DecorateForGang(const model::Job& job, const std::string& replica_type,
                     const model::ReconcileConfig& config, model::Json& pod_template);

}  // namespace coach::reconcile
