#include "sdk/cpp/cli/offline_commands.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
#include "common/version/version.h"
#include "operator/model/job_plan.h"
#include "operator/model/reconcile_types.h"
#include "operator/reconcile/plan_job.h"
#include "operator/trainer/runtime_directory.h"
#include "operator/trainer/runtime_lookup.h"
#include "sdk/cpp/cli/exit_codes.h"
#include "sdk/cpp/cli/manifest_input.h"

namespace coach::cli {
namespace {

struct Input {
  std::vector<api::v1::TrainingJob> jobs;
  std::vector<nlohmann::json> runtimes;  // TrainingRuntime and ClusterTrainingRuntime documents
};

bool IsRuntime(const nlohmann::json& doc) {
  const std::string kind = doc.is_object() ? doc.value("kind", "") : "";
  return kind == "TrainingRuntime" || kind == "ClusterTrainingRuntime";
}

absl::StatusOr<Input> Load(const OfflineOptions& options) {
  absl::StatusOr<std::string> text = ReadInput(options.file);
  if (!text.ok()) return text.status();
  Input input;
  // Runtimes ride along with their TrainJobs in upstream's examples: keep them aside, and the
  // jobs' documents as they are (their numbering in errors is the file's when it holds none).
  absl::StatusOr<std::vector<nlohmann::json>> docs = api::v1::codec::ParseYamlDocuments(*text);
  std::string jobs_text = *text;
  if (docs.ok() && std::any_of(docs->begin(), docs->end(), IsRuntime)) {
    jobs_text.clear();
    for (nlohmann::json& doc : *docs) {
      if (IsRuntime(doc)) {
        input.runtimes.push_back(std::move(doc));
      } else {
        absl::StrAppend(&jobs_text, "---\n", api::v1::codec::ToYaml(doc));
      }
    }
  }
  absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs = LoadJobs(jobs_text, options.namespace_);
  if (!jobs.ok()) return jobs.status();
  input.jobs = std::move(*jobs);
  return input;
}

// The runtime a TrainJob names: from the input first, then the runtimes directory.
absl::StatusOr<nlohmann::json> RuntimeOf(const api::v1::TrainingJob& job, const Input& input,
                                         const std::string& dir) {
  const trainer::RuntimeReference ref = trainer::RuntimeReferenceOf(job);
  const std::string& ns = job.metadata().namespace_();
  for (const nlohmann::json& runtime : input.runtimes) {
    const nlohmann::json meta = runtime.value("metadata", nlohmann::json::object());
    if (runtime.value("kind", "") != ref.kind || meta.value("name", "") != ref.name) continue;
    if (!ref.cluster() && meta.value("namespace", ns) != ns) continue;
    return runtime;
  }
  if (!dir.empty()) {
    absl::StatusOr<std::optional<nlohmann::json>> found =
        trainer::FindRuntimeInDirectory(dir, ref.kind, ns, ref.name);
    if (!found.ok()) return found.status();
    if (*found) return **found;
  }
  return absl::NotFoundError(absl::StrCat(
      job.metadata().name(), ": spec.runtimeRef: ", ref.kind, " \"", ref.name,
      "\" is not in the input", dir.empty() ? "" : absl::StrCat(" nor under ", dir),
      " (render merges a TrainJob with its runtime: add the runtime's file with -f, or "
      "--training-runtimes DIR)"));
}

// What the operator creates for a job: its plan's shared objects, then every pod (and its
// Service, where each pod has one) in the kind's order of replica types.
absl::StatusOr<std::vector<model::KubeObject>> JobObjects(const api::v1::TrainingJob& job,
                                                          const Input& input,
                                                          const std::string& dir,
                                                          const model::ReconcileConfig& config) {
  model::ObservedState observed;
  if (job.kind() == api::v1::TRAIN_JOB) {
    absl::StatusOr<nlohmann::json> runtime = RuntimeOf(job, input, dir);
    if (!runtime.ok()) return runtime.status();
    observed.train_job_runtime = runtime->dump();
  }
  absl::StatusOr<model::JobPlan> plan = reconcile::PlanJob(job, observed, config);
  if (!plan.ok()) return plan.status();
  return reconcile::PlannedObjects(*plan);
}

void PrintError(const absl::Status& status, std::ostream& err) {
  err << "error: " << status.message() << "\n";
}

}  // namespace

int RunValidate(const OfflineOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<Input> input = Load(options);
  if (!input.ok()) {
    PrintError(input.status(), err);
    return kExitInvalid;
  }
  if (options.output == "json") {
    out << api::v1::codec::JobsToJson(input->jobs) << "\n";
  } else {
    out << api::v1::codec::JobsToYaml(input->jobs);
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
  absl::StatusOr<Input> input = Load(options);
  if (!input.ok()) {
    PrintError(input.status(), err);
    return kExitInvalid;
  }
  model::ReconcileConfig config;
  // What the kube backend creates: coach.dev/launcher jobs get the chart image's init container.
  config.launcher_image = absl::StrCat("ghcr.io/coach/coach-operator:", kVersion);
  // ... and PyTorch Workers the init container that waits for their Master (master_wait.h).
  config.pytorch_init_image = config.launcher_image;
  config.karpenter = *placement;
  absl::StatusOr<model::GangScheduler> gang = model::ParseGangScheduler(options.gang_scheduler);
  if (!gang.ok()) {
    PrintError(
        absl::InvalidArgumentError(absl::StrCat("--gang-scheduler: ", gang.status().message())),
        err);
    return kExitUsage;
  }
  config.gang_scheduler = *gang;
  nlohmann::json items = nlohmann::json::array();
  for (const api::v1::TrainingJob& job : input->jobs) {
    absl::StatusOr<std::vector<model::KubeObject>> objects =
        JobObjects(job, *input, options.training_runtimes, config);
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
