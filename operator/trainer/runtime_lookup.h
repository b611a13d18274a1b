#pragma once

// A TrainJob's runtime as both backends find it: the job's snapshot first (the
// `<job>-runtime-snapshot` ConfigMap, whose data.runtime holds the runtime the job was built
// from, so that a runtime changed or deleted later does not change a running job), else the
// TrainingRuntime or ClusterTrainingRuntime its spec.runtimeRef names, as the backend knows it
// now. What is found lands in model::ObservedState for the reconciler.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::trainer {

inline constexpr char kRuntimeSnapshotKey[] = "runtime";
inline constexpr char kRuntimeSnapshotSuffix[] = "-runtime-snapshot";

// What a TrainJob's spec.runtimeRef names, CRD defaults applied: kind "ClusterTrainingRuntime"
// (or "TrainingRuntime") and name ("" when the spec has none).
struct RuntimeReference {
  std::string kind;
  std::string name;
  bool cluster() const { return kind == "ClusterTrainingRuntime"; }
};
RuntimeReference RuntimeReferenceOf(const model::Job& job);

// "<job>-runtime-snapshot".
std::string RuntimeSnapshotName(const model::Job& job);

// Fills observed.train_job_runtime from the text of a job's runtime snapshot (the ConfigMap's
// data.runtime); a snapshot that is not one runtime object makes the job refused
// (observed.refused), naming the ConfigMap.
void ObserveRuntimeSnapshot(const model::Job& job, const std::string& yaml,
                            model::ObservedState& observed);

// Where a backend looks.
struct RuntimeSource {
  // The snapshot ConfigMap's data.runtime when the ConfigMap exists ("" when it has none).
  std::function<absl::StatusOr<std::optional<std::string>>()> snapshot;
  // The runtime `ref` names; nullopt when there is none.
  std::function<absl::StatusOr<std::optional<nlohmann::json>>(const RuntimeReference& ref)> find;
  // Where `find` looked, appended to "spec.runtimeRef: <kind> \"<name>\" not found".
  std::function<std::string(const RuntimeReference& ref)> where;
};

// A TrainJob: sets observed.train_job_runtime (and runtime_from_snapshot) from the snapshot or
// the runtime, or observed.runtime_missing saying what was looked for (an unsupported
// runtimeRef.kind is never looked up). Any other kind names no runtime: nothing is looked up.
// Errors: what the source's calls return (Unavailable and the like).
absl::Status ObserveRuntime(const model::Job& job, const RuntimeSource& source,
                            model::ObservedState& observed);

}  // namespace coach::trainer
