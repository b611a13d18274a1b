#pragma once

// The reconciler's side of the Karpenter placement policy (integrations/karpenter): the
// job's annotations and labels in, the replica's pod template decorated.

#include <string>

#include "absl/status/status.h"
#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// InvalidArgument naming the annotation when a coach.dev/ Karpenter annotation is invalid
// (integrations/karpenter/annotations.h); checked at admission whether or not the policy is on.
absl::Status ValidateKarpenterAnnotations(const model::Job& job);

// Adds the placement of config.karpenter (or the job's coach.dev/karpenter) to a replica's
// pod template; the zone affinity selects the job's pods by JobLabels.
// The job's interruptions (status.coach.disruptions: restarts the program did not cause) count
// toward coach.dev/on-demand-after: past it, the pods go to on-demand capacity.
absl::Status PlaceForKarpenter(const model::Job& job, const model::ReconcileConfig& config,
                               model::Json& pod_template);

// The words of the restart with which the job's pods move to on-demand capacity: the job had
// `before` interruptions and has `after` now, and coach.dev/on-demand-after lies between; "" for
// any other restart.
std::string OnDemandFromNow(const model::Job& job, int before, int after);

}  // namespace coach::reconcile
