#include "operator/reconcile/master_wait.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "operator/reconcile/launcher_wrap.h"

namespace coach::reconcile {
namespace {

bool HasInitContainer(const Json& spec, const std::string& name) {
  if (!spec.contains("initContainers") || !spec["initContainers"].is_array()) return false;
  for (const Json& c : spec["initContainers"]) {
    if (c.is_object() && c.value("name", "") == name) return true;
  }
  return false;
}

}  // namespace

absl::Status ValidateWaitForMasterAnnotation(const model::Job& job) {
  const std::string* v = AnnotationOf(job, kAnnotationWaitForMaster);
  if (v == nullptr || *v == "true" || *v == "false") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", kAnnotationWaitForMaster,
                                                 "]: must be \"true\" or \"false\", got \"", *v,
                                                 "\""));
}

void AddMasterWait(const model::Job& job, const std::string& type,
                   const model::ReconcileConfig& config, Json& pod_template) {
  const bool pytorch = job.kind() == api::v1::PYTORCH_JOB;
  if (config.pytorch_init_image.empty() || (!pytorch && job.kind() != api::v1::XGBOOST_JOB) ||
      type != "Worker" || !HasReplicaType(job, "Master") || LauncherEnabled(job)) {
    return;
  }
  const char* name = pytorch ? kMasterWaitContainer : kXGBoostMasterWaitContainer;
  const std::string* opt = AnnotationOf(job, kAnnotationWaitForMaster);
  if (opt != nullptr && *opt == "false") return;
  if (!pod_template.contains("spec") || !pod_template["spec"].is_object()) return;
  Json& spec = pod_template["spec"];
  if (HasInitContainer(spec, name)) return;
  const int tries = config.pytorch_init_max_tries > 0 ? config.pytorch_init_max_tries : 1;
  // The Master's address as the Workers' MASTER_ADDR names it.
  const std::string master = ReplicaName(job, "Master", 0);
  EnsureArray(spec, "initContainers")
      .push_back(
          {{"name", name},
           {"image", config.pytorch_init_image},
           {"imagePullPolicy", "IfNotPresent"},
           {"command", Json::array({kLauncherImagePath, "--wait-for-host", master, "--peer-timeout",
                                    absl::StrCat(tries * kMasterWaitSecondsPerTry, "s")})},
           {"resources",
            {{"limits", {{"cpu", "100m"}, {"memory", "20Mi"}}},
             {"requests", {{"cpu", "50m"}, {"memory", "10Mi"}}}}}});
}

}  // namespace coach::reconcile
