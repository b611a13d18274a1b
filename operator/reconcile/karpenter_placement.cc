#include "operator/reconcile/karpenter_placement.h"

#include "absl/strings/str_cat.h"
#include "integrations/karpenter/annotations.h"
#include "integrations/karpenter/placement.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {
namespace {

karpenter::Annotations AnnotationsOf(const model::Job& job) {
  const auto& annotations = job.metadata().annotations();
  return karpenter::Annotations(annotations.begin(), annotations.end());
}

}  // namespace

absl::Status ValidateKarpenterAnnotations(const model::Job& job) {
  return karpenter::ParseJobOptions(AnnotationsOf(job)).status();
}

absl::Status PlaceForKarpenter(const model::Job& job, const model::ReconcileConfig& config,
                               model::Json& pod_template) {
  return karpenter::ApplyPlacement(
      config.karpenter,
      karpenter::JobFacts{AnnotationsOf(job), JobLabels(job), job.status().coach().disruptions()},
      pod_template);
}

std::string OnDemandFromNow(const model::Job& job, int before, int after) {
  absl::StatusOr<karpenter::JobOptions> options = karpenter::ParseJobOptions(AnnotationsOf(job));
  if (!options.ok() || !karpenter::GoesOnDemand(*options, after) ||
      karpenter::GoesOnDemand(*options, before)) {
    return "";
  }
  return absl::StrCat("after ", after, " interruption(s) (", karpenter::kAnnotationOnDemandAfter,
                      ": ", *options->on_demand_after, ") its pods go to on-demand capacity (",
                      karpenter::kLabelCapacityType, ": on-demand)");
}

}  // namespace coach::reconcile
