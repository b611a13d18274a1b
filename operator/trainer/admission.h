#pragma once

// Upstream Trainer v2.3.0's admission webhooks for trainer.kubeflow.org/v1alpha1
// (`pkg/webhooks/*.go` and the plugins' Validate; shared/reference/kubeflow-v2.md section 7), as
// pure functions on objects as the API server holds them (CRD defaults applied), so coach
// refuses what upstream refuses, with upstream's paths and messages, before storing it.
//
// Malformed input (a field of the wrong JSON type) is InvalidArgument naming the field; it
// never throws.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/trainer/field_error.h"

namespace coach::trainer::admission {

struct Result {
  std::vector<FieldError> errors;
  // Admission warnings (kubectl prints them as `Warning: ...`); they never refuse.
  std::vector<std::string> warnings;

  bool allowed() const { return errors.empty(); }
  // The text upstream's webhook denies with (after `admission webhook "<name>" denied the
  // request: `): the aggregated field errors.
  std::string Message() const { return Aggregate(errors); }
};

// validator.trainjob.trainer.kubeflow.org. `runtime` is the object spec.runtimeRef names
// (nullptr when it does not exist); `old_train_job` is nullptr on create. Run it on the object
// DefaultTrainJob returned, as the API server runs mutating webhooks first.
absl::StatusOr<Result> ValidateTrainJob(const nlohmann::json& train_job,
                                        const nlohmann::json* runtime,
                                        const nlohmann::json* old_train_job);

// validator.trainingruntime / validator.clusterTrainingRuntime for either runtime kind;
// `old_runtime` is nullptr on create. A TrainingRuntime is checked on create only.
absl::StatusOr<Result> ValidateTrainingRuntime(const nlohmann::json& runtime,
                                               const nlohmann::json* old_runtime);

// defaulter.trainjob.trainer.kubeflow.org: the TrainJob with runtimePatches[].time set to
// `now` (RFC 3339, seconds) on create where unset, and on update for patches whose manager is
// new (where unset) or whose content changed; an unchanged patch keeps its old time.
absl::StatusOr<nlohmann::json> DefaultTrainJob(const nlohmann::json& train_job,
                                               const nlohmann::json* old_train_job, absl::Time now);

}  // namespace coach::trainer::admission
