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
// scheduling is off. minMember = schedulingPolicy.minAvailable or total replicas.
// minResources is written only when schedulingPolicy.minResources is given.
std::optional<model::KubeObject> DesiredPodGroup(const model::Job& job,
                                                 const model::ReconcileConfig& config);

// Sets schedulerName when the template has none, and the group annotations (Volcano)
// or label (scheduler-plugins). No-op when gang scheduling is off.
void DecorateForGang(const model::Job& job, const std::string& replica_type,
                     const model::ReconcileConfig& config, model::Json& pod_template);

}  // namespace coach::reconcile
