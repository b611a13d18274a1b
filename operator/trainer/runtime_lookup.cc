#include "operator/trainer/runtime_lookup.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/yaml_json.h"
#include "common/status_macros.h"

namespace coach::trainer {

using nlohmann::json;

RuntimeReference RuntimeReferenceOf(const model::Job& job) {
  const json spec = json::parse(job.spec().train_job_spec_json(), nullptr, false);
  RuntimeReference ref{"ClusterTrainingRuntime", ""};
  if (!spec.is_object() || !spec.contains("runtimeRef") || !spec["runtimeRef"].is_object()) {
    return ref;
  }
  const json& r = spec["runtimeRef"];
  if (r.contains("kind") && r["kind"].is_string()) ref.kind = r["kind"].get<std::string>();
  if (r.contains("name") && r["name"].is_string()) ref.name = r["name"].get<std::string>();
  return ref;
}

std::string RuntimeSnapshotName(const model::Job& job) {
  return absl::StrCat(job.metadata().name(), kRuntimeSnapshotSuffix);
}

void ObserveRuntimeSnapshot(const model::Job& job, const std::string& yaml,
                            model::ObservedState& observed) {
  absl::StatusOr<std::vector<json>> docs = api::v1::codec::ParseYamlDocuments(yaml);
  if (!docs.ok() || docs->size() != 1 || !docs->front().is_object()) {
    observed.refused =
        absl::StrCat("ConfigMap ", RuntimeSnapshotName(job), ": data.", kRuntimeSnapshotKey,
                     " is not the runtime this TrainJob was built from");
    return;
  }
  observed.train_job_runtime = docs->front().dump();
  observed.runtime_from_snapshot = true;
}

absl::Status ObserveRuntime(const model::Job& job, const RuntimeSource& source,
                            model::ObservedState& observed) {
  if (job.kind() != api::v1::TRAIN_JOB) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::optional<std::string> snapshot, source.snapshot());
  if (snapshot.has_value()) {
    ObserveRuntimeSnapshot(job, *snapshot, observed);
    return absl::OkStatus();
  }
  const RuntimeReference ref = RuntimeReferenceOf(job);
  if (!ref.cluster() && ref.kind != "TrainingRuntime") {
    observed.runtime_missing =
        absl::StrCat("spec.runtimeRef.kind: unsupported runtime: ", ref.kind);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::optional<json> runtime, source.find(ref));
  if (!runtime.has_value()) {
    observed.runtime_missing = absl::StrCat("spec.runtimeRef: ", ref.kind, " \"", ref.name,
                                            "\" not found", source.where(ref));
    return absl::OkStatus();
  }
  observed.train_job_runtime = runtime->dump();
  return absl::OkStatus();
}

}  // namespace coach::trainer
