#include "operator/reconcile/karpenter_placement.h"

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
      config.karpenter, karpenter::JobFacts{AnnotationsOf(job), JobLabels(job)}, pod_template);
}

}  // namespace coach::reconcile
