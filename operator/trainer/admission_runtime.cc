// validator.trainingruntime / validator.clustertrainingruntime (upstream
// pkg/webhooks/{trainingruntime,clustertrainingruntime}_webhook.go and the chart's
// objectSelector).

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/trainer/admission.h"
#include "operator/trainer/json_fields.h"
#include "operator/trainer/runtime_jobs.h"

namespace coach::trainer::admission {
namespace {

using nlohmann::json;

constexpr char kValidationLabel[] = "trainer.kubeflow.org/webhook-validation";
constexpr char kSupportLabel[] = "trainer.kubeflow.org/support";
constexpr char kDeprecationPolicyUrl[] =
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
    "#runtime-deprecation-policy";

// The container an ancestor-labelled job must have; "" for labels that are no ancestor.
std::string RequiredContainer(const std::string& ancestor) {
  if (ancestor == "trainer") return "node";
  if (ancestor == "dataset-initializer" || ancestor == "model-initializer") return ancestor;
  return "";
}

absl::StatusOr<bool> ValidationDisabled(const json& object) {
  ASSIGN_OR_RETURN(std::string v, Label(object, kValidationLabel));
  return v == "disabled";
}

}  // namespace

absl::StatusOr<Result> ValidateTrainingRuntime(const json& runtime, const json* old_runtime) {
  Result result;
  if (!runtime.is_object()) return absl::InvalidArgumentError("runtime: must be an object");
  ASSIGN_OR_RETURN(std::string kind, StringMember(runtime, "kind", "kind"));
  if (kind != "TrainingRuntime" && kind != "ClusterTrainingRuntime") {
    return absl::InvalidArgumentError(
        absl::StrCat("kind: must be TrainingRuntime or ClusterTrainingRuntime, not ", kind));
  }
  ASSIGN_OR_RETURN(std::vector<RuntimeJob> jobs, ReadRuntimeJobs(runtime));
  // The webhooks' objectSelector (label NotIn [disabled]) matches an update when either the
  // old or the new object matches.
  ASSIGN_OR_RETURN(bool skip, ValidationDisabled(runtime));
  if (skip && old_runtime != nullptr) {
    ASSIGN_OR_RETURN(skip, ValidationDisabled(*old_runtime));
  }
  if (skip) return result;
  if (kind == "TrainingRuntime" && old_runtime != nullptr) return result;

  ASSIGN_OR_RETURN(std::string support, Label(runtime, kSupportLabel));
  if (kind == "ClusterTrainingRuntime" && old_runtime == nullptr && support == "deprecated") {
    ASSIGN_OR_RETURN(std::string name, ObjectName(runtime));
    result.warnings.push_back(absl::StrCat(
        "ClusterTrainingRuntime \"", name,
        "\" is deprecated and will be removed in a future release of Kubeflow Trainer. See "
        "runtime deprecation policy: ",
        kDeprecationPolicyUrl));
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const RuntimeJob& job = jobs[i];
    if (!job.has_labels || !job.ancestor.has_value()) continue;
    const std::string required = RequiredContainer(*job.ancestor);
    if (required.empty()) continue;
    const std::string path = absl::StrCat("spec.template.spec.replicatedJobs[", i, "]");
    if (job.replicas != 1) {
      result.errors.push_back(Invalid(path + ".replicas", job.replicas, "always must be 1"));
    }
    // Upstream looks at containers only, not initContainers.
    bool has_required = false;
    for (const RuntimeContainer& c : job.containers) has_required |= c.name == required;
    if (!has_required) {
      result.errors.push_back(Invalid(
          path + ".template.spec.template.spec.containers",
          nlohmann::ordered_json(job.containers_json),
          absl::StrCat("must contain the required container for the ancestor: ", *job.ancestor)));
    }
  }
  return result;
}

}  // namespace coach::trainer::admission
