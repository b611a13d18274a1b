#include "operator/reconcile/mlflow_env.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "api/v1/kinds.h"

namespace coach::reconcile {
namespace {

absl::Status Bad(const char* key, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", key, "]: ", why));
}

// "" when `name` is a usable experiment name, else why not.
std::string ExperimentNameProblem(const std::string& name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 500) return "longer than 500 characters";
  for (char c : name) {
    if (absl::ascii_iscntrl(static_cast<unsigned char>(c))) {
      return "must not contain control characters";
    }
  }
  return "";
}

const Json* EnvEntry(const Json& container, std::string_view name) {
  if (!container.contains("env") || !container["env"].is_array()) return nullptr;
  for (const Json& e : container["env"]) {
    if (e.is_object() && e.value("name", "") == name) return &e;
  }
  return nullptr;
}

// The experiment a default container names with a literal MLFLOW_EXPERIMENT_NAME, searched in
// the kind's replica order; "" when none does.
std::string ContainerExperiment(const model::Job& job) {
  absl::StatusOr<const api::v1::KindInfo*> kind = KindOf(job);
  if (!kind.ok()) return "";
  for (const std::string& type : ReplicaTypes(job)) {
    absl::StatusOr<Json> tmpl = ParseTemplate(job, type);
    if (!tmpl.ok()) continue;
    std::optional<size_t> index = DefaultContainerIndex(*tmpl, **kind);
    if (!index.has_value()) continue;
    const Json* e = EnvEntry((*tmpl)["spec"]["containers"][*index], "MLFLOW_EXPERIMENT_NAME");
    if (e == nullptr || !e->contains("value") || !(*e)["value"].is_string()) continue;
    const std::string name = (*e)["value"].get<std::string>();
    if (ExperimentNameProblem(name).empty()) return name;
  }
  return "";
}

std::string RunContext(const model::Job& job, std::string_view type, int index,
                       const MlflowTarget& target) {
  const api::v1::KindInfo* kind = api::v1::FindKind(job.kind());
  Json tags = {{"coach.job_uid", job.metadata().uid()},
               {"coach.namespace", job.metadata().namespace_()},
               {"coach.job_name", job.metadata().name()},
               {"coach.kind", kind == nullptr ? std::string() : std::string(kind->name)},
               {"coach.replica", absl::StrCat(Lower(type), "-", index)},
               {"coach.replica_type", std::string(type)},
               {"coach.replica_index", absl::StrCat(index)}};
  if (!target.run_id.empty()) tags["mlflow.parentRunId"] = target.run_id;
  return tags.dump();
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

namespace {

absl::string_view WithoutTrailingSlash(absl::string_view uri) {
  while (!uri.empty() && uri.back() == '/') uri.remove_suffix(1);
  return uri;
}

// The host of an http(s) URI, lowercased, without brackets or port.
std::string HostOf(absl::string_view uri) {
  absl::ConsumePrefix(&uri, "http://") || absl::ConsumePrefix(&uri, "https://");
  absl::string_view authority = uri.substr(0, uri.find_first_of("/?#"));
  std::string host;
  if (absl::StartsWith(authority, "[")) {
    host = std::string(authority.substr(1, authority.find(']') - 1));
  } else {
    host = std::string(authority.substr(0, authority.rfind(':')));
  }
  return absl::AsciiStrToLower(host);
}

// Link-local (169.254.0.0/16, where clouds serve instance metadata and credentials; fe80::/10)
// and the metadata names clouds resolve.
bool IsMetadataHost(const std::string& host) {
  if (absl::StartsWith(host, "169.254.") || absl::StartsWith(host, "fe8") ||
      absl::StartsWith(host, "fe9") || absl::StartsWith(host, "fea") ||
      absl::StartsWith(host, "feb")) {
    return true;
  }
  for (const char* name : {"metadata", "metadata.google.internal", "instance-data",
                           "metadata.azure.com", "fd00:ec2::254"}) {
    if (host == name || absl::StartsWith(host, absl::StrCat(name, "."))) return true;
  }
  return false;
}

}  // namespace

bool IsOperatorsServer(absl::string_view uri, const model::MlflowConfig& config) {
  return !config.tracking_uri.empty() &&
         WithoutTrailingSlash(uri) == WithoutTrailingSlash(config.tracking_uri);
}

std::string JobTrackingUriProblem(absl::string_view uri, const model::MlflowConfig& config) {
  if (IsOperatorsServer(uri, config)) return "";
  if (IsMetadataHost(HostOf(uri))) {
    return "names a link-local or cloud metadata address, never a tracking server";
  }
  for (const std::string& allowed : config.allowed_tracking_uris) {
    if (WithoutTrailingSlash(uri) == WithoutTrailingSlash(allowed)) return "";
  }
  return "is not a server this operator lets jobs name (the operator's "
         "--mlflow-allowed-tracking-uris; leave the annotation out to use the operator's own)";
}

absl::Status ValidateMlflowAnnotations(const model::Job& job, const model::MlflowConfig& config) {
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
    if (std::string problem = JobTrackingUriProblem(*v, config); !problem.empty()) {
      return Bad(kAnnotationMlflowTrackingUri, problem);
    }
  }
  if (const std::string* v = AnnotationOf(job, kAnnotationMlflowExperiment)) {
    if (std::string problem = ExperimentNameProblem(*v); !problem.empty()) {
      return Bad(kAnnotationMlflowExperiment, problem);
    }
  }
  return absl::OkStatus();
}

void ClearOperatorMlflowAnnotations(model::Job* job) {
  auto* annotations = job->mutable_metadata()->mutable_annotations();
  annotations->erase(kAnnotationMlflowRunId);
  annotations->erase(kAnnotationMlflowExperimentId);
  annotations->erase(kAnnotationMlflowRuns);
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
  if (const std::string* experiment = AnnotationOf(job, kAnnotationMlflowExperiment)) {
    target.experiment = *experiment;
  } else if (std::string own = ContainerExperiment(job); !own.empty()) {
    target.experiment = own;
  } else {
    target.experiment = config.experiment.empty() ? std::string("coach") : config.experiment;
  }
  if (const std::string* run = AnnotationOf(job, kAnnotationMlflowRunId)) target.run_id = *run;
  if (const std::string* exp = AnnotationOf(job, kAnnotationMlflowExperimentId)) {
    target.experiment_id = *exp;
  }
  return target;
}

std::vector<std::pair<std::string, std::string>> MlflowEnv(const model::Job& job,
                                                           const model::MlflowConfig& config,
                                                           std::string_view type, int index) {
  std::vector<std::pair<std::string, std::string>> env;
  std::optional<MlflowTarget> target = MlflowTargetFor(job, config);
  if (!target.has_value()) return env;
  env.emplace_back("MLFLOW_TRACKING_URI", target->tracking_uri);
  env.emplace_back("MLFLOW_EXPERIMENT_NAME", target->experiment);
  env.emplace_back("MLFLOW_RUN_CONTEXT", RunContext(job, type, index, *target));
  if (!target->run_id.empty() && !target->experiment_id.empty()) {
    env.emplace_back("COACH_MLFLOW_RUN_ID", target->run_id);
    env.emplace_back("COACH_MLFLOW_EXPERIMENT_ID", target->experiment_id);
    env.emplace_back("COACH_MLFLOW_TRACKING_URI", target->tracking_uri);
    env.emplace_back("COACH_MLFLOW_REPLICA", absl::StrCat(Lower(type), "-", index));
    if (IsMasterRole(job, type, index)) env.emplace_back("COACH_MLFLOW_RESUME", "1");
  }
  // The operator's credentials go to its own server only.
  if (IsOperatorsServer(target->tracking_uri, config)) {
    for (const auto& kv : config.forwarded_env) env.push_back(kv);
  }
  return env;
}

void AddMlflowEnv(const model::Job& job, const model::MlflowConfig& config, std::string_view type,
                  int index, Json& pod_template) {
  const std::vector<std::pair<std::string, std::string>> env = MlflowEnv(job, config, type, index);
  if (env.empty()) return;
  Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return;
  for (Json& container : *containers) {
    if (!container.is_object()) continue;
    // A container that names its experiment keeps it: MLflow raises when MLFLOW_EXPERIMENT_NAME
    // and MLFLOW_EXPERIMENT_ID name different experiments.
    const bool names_experiment =
        HasEnv(container, "MLFLOW_EXPERIMENT_NAME") || HasEnv(container, "MLFLOW_EXPERIMENT_ID");
    for (const auto& [name, value] : env) {
      if (name == "MLFLOW_EXPERIMENT_NAME" && names_experiment) continue;
      if (!HasEnv(container, name)) AppendEnv(container, name, value);
    }
  }
}

}  // namespace coach::reconcile
