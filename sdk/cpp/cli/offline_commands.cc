#include "sdk/cpp/cli/offline_commands.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
#include "common/version/version.h"
#include "operator/model/reconcile_types.h"
#include "operator/reconcile/desired_objects.h"
#include "sdk/cpp/cli/exit_codes.h"
#include "sdk/cpp/cli/manifest_input.h"

namespace coach::cli {
namespace {

absl::StatusOr<std::vector<api::v1::TrainingJob>> Load(const OfflineOptions& options) {
  absl::StatusOr<std::string> text = ReadInput(options.file);
  if (!text.ok()) return text.status();
  return LoadJobs(*text, options.namespace_);
}

void PrintError(const absl::Status& status, std::ostream& err) {
  err << "error: " << status.message() << "\n";
}

}  // namespace

int RunValidate(const OfflineOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs = Load(options);
  if (!jobs.ok()) {
    PrintError(jobs.status(), err);
    return kExitInvalid;
  }
  if (options.output == "json") {
    out << api::v1::codec::JobsToJson(*jobs) << "\n";
  } else {
    out << api::v1::codec::JobsToYaml(*jobs);
  }
  return kExitOk;
}

int RunRender(const OfflineOptions& options, std::ostream& out, std::ostream& err) {
  return RunRender(options, karpenter::ConfigFlags{}, out, err);
}

int RunRender(const OfflineOptions& options, const karpenter::ConfigFlags& karpenter,
              std::ostream& out, std::ostream& err) {
  absl::StatusOr<karpenter::Config> placement = karpenter::ConfigFromFlags(karpenter);
  if (!placement.ok()) {
    PrintError(placement.status(), err);
    return kExitUsage;
  }
  absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs = Load(options);
  if (!jobs.ok()) {
    PrintError(jobs.status(), err);
    return kExitInvalid;
  }
  model::ReconcileConfig config;
  // What the kube backend creates: coach.dev/launcher jobs get the chart image's init container.
  config.launcher_image = absl::StrCat("ghcr.io/coach/coach-operator:", kVersion);
  // ... and PyTorch Workers the init container that waits for their Master (master_wait.h).
  config.pytorch_init_image = config.launcher_image;
  config.karpenter = *placement;
  nlohmann::json items = nlohmann::json::array();
  for (const api::v1::TrainingJob& job : *jobs) {
    absl::StatusOr<std::vector<model::KubeObject>> objects = reconcile::DesiredObjects(job, config);
    if (!objects.ok()) {
      PrintError(objects.status(), err);
      return kExitInvalid;
    }
    for (model::KubeObject& object : *objects) items.push_back(std::move(object.body));
  }
  if (options.output == "json") {
    nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
    out << list.dump(2) << "\n";
    return kExitOk;
  }
  for (const nlohmann::json& item : items) {
    out << "---\n" << api::v1::codec::ToYaml(item);
  }
  return kExitOk;
}

}  // namespace coach::cli
