#include "operator/reconcile/launcher_wrap.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coach::reconcile {
namespace {

bool HasCommand(const Json& container) {
  return container.contains("command") && container["command"].is_array() &&
         !container["command"].empty();
}

}  // namespace

bool LauncherEnabled(const model::Job& job) {
  const std::string* v = AnnotationOf(job, kAnnotationLauncher);
  return v != nullptr && *v == "true";
}

absl::Status ValidateLauncherAnnotation(const model::Job& job) {
  const std::string* v = AnnotationOf(job, kAnnotationLauncher);
  if (v == nullptr) return absl::OkStatus();
  if (*v != "true" && *v != "false") {
    return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", kAnnotationLauncher,
                                                   "]: must be \"true\" or \"false\", got \"", *v,
                                                   "\""));
  }
  if (*v != "true") return absl::OkStatus();
  absl::StatusOr<const api::v1::KindInfo*> kind = KindOf(job);
  if (!kind.ok()) return kind.status();
  for (const std::string& type : ReplicaTypes(job)) {
    absl::StatusOr<Json> tmpl = ParseTemplate(job, type);
    if (!tmpl.ok()) return tmpl.status();
    Json* containers = MutableContainers(*tmpl);
    std::optional<size_t> index = DefaultContainerIndex(*tmpl, **kind);
    if (containers == nullptr || !index.has_value()) continue;  // the job's own validation says so
    if (!HasCommand((*containers)[*index])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.", std::string((*kind)->replica_specs_key), ".", type, ".template.spec.containers[",
          *index, "].command: required with ", kAnnotationLauncher,
          ": \"true\" (coach-launch wraps the command; an image's entrypoint is not known)"));
    }
  }
  return absl::OkStatus();
}

void WrapWithLauncher(const model::Job& job, const model::ReconcileConfig& config,
                      Json& pod_template) {
  if (!LauncherEnabled(job)) return;
  absl::StatusOr<const api::v1::KindInfo*> kind = KindOf(job);
  if (!kind.ok()) return;
  Json* containers = MutableContainers(pod_template);
  std::optional<size_t> index = DefaultContainerIndex(pod_template, **kind);
  if (containers == nullptr || !index.has_value()) return;
  Json& container = (*containers)[*index];
  const Json original = HasCommand(container) ? container["command"] : Json::array();
  Json command = Json::array();
  if (config.launcher_image.empty()) {
    command = Json::array({"coach-launch", "--"});
  } else {
    const std::string dir = kLauncherMountPath;
    command = Json::array(
        {dir + "/lib/ld.so", "--library-path", dir + "/lib", dir + "/bin/coach-launch", "--"});
    Json& spec = pod_template["spec"];
    EnsureArray(spec, "volumes")
        .push_back({{"name", kLauncherVolume}, {"emptyDir", Json::object()}});
    EnsureArray(spec, "initContainers")
        .push_back(
            {{"name", kLauncherInitContainer},
             {"image", config.launcher_image},
             {"command", Json::array({kLauncherImagePath, "--install", dir})},
             // The copy goes into the shared volume, not the image's own filesystem.
             {"volumeMounts", Json::array({{{"name", kLauncherVolume}, {"mountPath", dir}}})}});
    EnsureArray(container, "volumeMounts")
        .push_back({{"name", kLauncherVolume}, {"mountPath", dir}, {"readOnly", true}});
  }
  for (const Json& part : original) command.push_back(part);
  container["command"] = std::move(command);
}

}  // namespace coach::reconcile
