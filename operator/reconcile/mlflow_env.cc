#include "operator/reconcile/mlflow_env.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace coach::reconcile {
namespace {

absl::Status Bad(const char* key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", key, "]: ", why));
}

}  // namespace

absl::Status ValidateTrackingUri(absl::string_view uri) {
  absl::string_view rest = uri;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError("must be an http:// or https:// URI");
  }
  for (char c : uri) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return absl::InvalidArgumentError("must not contain whitespace or control characters");
    }
  }
  const absl::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        "must not carry credentials (user:password@); use MLFLOW_TRACKING_USERNAME/PASSWORD or "
        "MLFLOW_TRACKING_TOKEN in the operator's environment");
  }
  if (authority.empty() || authority.front() == ':') {
    return absl::InvalidArgumentError("has no host");
  }
  if (rest.find_first_of("?#") != absl::string_view::npos) {
    return absl::InvalidArgumentError("must not have a query or fragment");
  }
  return absl::OkStatus();
}

absl::Status ValidateMlflowAnnotations(const model::Job& job) {
  if (const std::string* v = AnnotationOf(job, kAnnotationMlflow)) {
    if (*v != "true" && *v != "false") {
      return Bad(kAnnotationMlflow,
                 absl::StrCat("must be \"true\" or \"false\", got \"", *v, "\""));
    }
  }
  if (const std::string* v = AnnotationOf(job, kAnnotationMlflowTrackingUri)) {
    if (absl::Status s = ValidateTrackingUri(*v); !s.ok()) {
      // The value is not echoed: it may hold a secret.
      return Bad(kAnnotationMlflowTrackingUri, s.message());
    }
  }
  if (const std::string* v = AnnotationOf(job, kAnnotationMlflowExperiment)) {
    if (v->empty()) return Bad(kAnnotationMlflowExperiment, "must not be empty");
    if (v->size() > 500) return Bad(kAnnotationMlflowExperiment, "longer than 500 characters");
    for (char c : *v) {
      if (absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
        return Bad(kAnnotationMlflowExperiment, "must not contain control characters");
      }
    }
  }
  return absl::OkStatus();
}

void ClearOperatorMlflowAnnotations(model::Job* job) {
  auto* annotations = job->mutable_metadata()->mutable_annotations();
  annotations->erase(kAnnotationMlflowRunId);
  annotations->erase(kAnnotationMlflowExperimentId);
}

std::optional<MlflowTarget> MlflowTargetFor(const model::Job& job,
                                            const model::MlflowConfig& config) {
  const std::string* enabled = AnnotationOf(job, kAnnotationMlflow);
  if (enabled != nullptr && *enabled == "false") return std::nullopt;
  MlflowTarget target;
  if (const std::string* uri = AnnotationOf(job, kAnnotationMlflowTrackingUri)) {
    target.tracking_uri = *uri;
  } else {
    target.tracking_uri = config.tracking_uri;
  }
  if (target.tracking_uri.empty()) return std::nullopt;
  const std::string* experiment = AnnotationOf(job, kAnnotationMlflowExperiment);
  target.experiment = experiment != nullptr       ? *experiment
                      : config.experiment.empty() ? std::string("coach")
                                                  : config.experiment;
  if (const std::string* run = AnnotationOf(job, kAnnotationMlflowRunId)) target.run_id = *run;
  if (const std::string* exp = AnnotationOf(job, kAnnotationMlflowExperimentId)) {
    target.experiment_id = *exp;
  }
  return target;
}

std::vector<std::pair<std::string, std::string>> MlflowEnv(const model::Job& job,
                                                           const model::MlflowConfig& config) {
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<MlflowTarget> target = MlflowTargetFor(job, config);
  if (!target.has_value()) return env;
  env.emplace_back("MLFLOW_TRACKING_URI", target->tracking_uri);
  env.emplace_back("MLFLOW_EXPERIMENT_NAME", target->experiment);
  if (!target->experiment_id.empty())
    env.emplace_back("MLFLOW_EXPERIMENT_ID", target->experiment_id);
  if (!target->run_id.empty()) env.emplace_back("MLFLOW_RUN_ID", target->run_id);
  for (const auto& kv : config.forwarded_env) env.push_back(kv);
  return env;
}

void AddMlflowEnv(const model::Job& job, const model::MlflowConfig& config, Json& pod_template) {
  const std::vector<std::pair<std::string, std::string>> env = MlflowEnv(job, config);
  if (env.empty()) return;
  Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return;
  for (Json& container : *containers) {
    if (!container.is_object()) continue;
    for (const auto& [name, value] : env) {
      if (!HasEnv(container, name)) AppendEnv(container, name, value);
    }
  }
}

}  // namespace coach::reconcile
