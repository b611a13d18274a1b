#include "operator/reconcile/train_job_plan.h"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/job_policies.h"
#include "api/v1/kinds.h"
#include "api/v1/recovery_annotations.h"
#include "common/status_macros.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/recovery_policy.h"
#include "operator/reconcile/train_job_objects.h"
#include "operator/trainer/admission.h"
#include "operator/trainer/elastic_nodes.h"
#include "operator/trainer/merge_runtime.h"
#include "operator/trainer/realize.h"
#include "operator/trainer/runtime_lookup.h"

namespace coach::reconcile {
namespace {

using nlohmann::json;

// Kubernetes' default Job backoffLimit: what a runtime that sets none gets upstream.
constexpr int kJobBackoffLimit = 6;

model::KubeObject ObjectOf(json body) {
  model::KubeObject o;
  o.api_version = body.value("apiVersion", "v1");
  o.kind = body.value("kind", "");
  o.name = body["metadata"].value("name", "");
  o.namespace_ = body["metadata"].value("namespace", "");
  o.body = std::move(body);
  return o;
}

// The replicated job's Job template spec in the merged JobSet (null when absent).
const json& JobSpecOf(const json& job_set, const std::string& rjob) {
  static const json* const kNull = new json();
  for (const json& j : job_set["spec"]["replicatedJobs"]) {
    if (j.value("name", "") == rjob) return j["template"]["spec"];
  }
  return *kNull;
}

}  // namespace

absl::StatusOr<model::JobPlan> PlanTrainJob(const model::Job& job,
                                            const model::ObservedState& observed, int attempt,
                                            const model::ReconcileConfig& config) {
  if (observed.train_job_runtime.empty()) {
    return absl::FailedPreconditionError(observed.runtime_missing.empty()
                                             ? std::string("spec.runtimeRef: runtime not found")
                                             : observed.runtime_missing);
  }
  const json runtime = json::parse(observed.train_job_runtime, nullptr, false);
  if (!runtime.is_object()) {
    return absl::InvalidArgumentError("spec.runtimeRef: the runtime is not a JSON object");
  }
  json train_job = api::v1::codec::JobToJson(job);
  train_job.erase("status");
  ASSIGN_OR_RETURN(trainer::MergedTrainJob merged, trainer::MergeRuntime(train_job, runtime));
  // On every pass, not only at admission: a TrainJob stored while no webhook ran, or annotated
  // since, fails naming the annotation rather than training with a range it cannot have.
  trainer::ElasticFacts elastic;
  elastic.torch = merged.ml_policy.is_object() && merged.ml_policy.contains("torch");
  elastic.trainer_job = merged.trainer_job;
  if (merged.ml_policy.is_object()) {
    elastic.num_nodes = merged.ml_policy.value("numNodes", elastic.num_nodes);
  }
  RETURN_IF_ERROR(trainer::ReadElasticNodes(train_job, elastic).status());
  trainer::ClusterFacts facts;
  facts.job_set_uid = job.metadata().uid();
  facts.restarts = attempt;
  for (const json& rjob : merged.job_set["spec"]["replicatedJobs"]) {
    facts.job_uids[rjob.value("name", "")] = job.metadata().uid();
  }
  ASSIGN_OR_RETURN(trainer::RealizedTrainJob realized,
                   trainer::RealizeTrainJob(train_job, merged, facts));

  const Json owners = OwnerReferences(job);
  std::vector<json*> all_pods;
  for (trainer::RealizedJob& rjob : realized.jobs) {
    for (json& pod : rjob.pods) all_pods.push_back(&pod);
  }
  ASSIGN_OR_RETURN(TrainJobGang gang,
                   GangOf(merged.job_set, merged.pod_group_policy, config, all_pods, owners));

  model::JobPlan plan;
  auto expanded = std::make_shared<model::Job>(job);
  plan.kind = api::v1::FindKind(job.kind());
  plan.words = model::StatusWords::kJobSet;
  plan.leading_type = merged.trainer_job;
  plan.status_counts_replicas = true;
  plan.reports_jobs_status = true;
  auto pods = std::make_shared<std::map<std::pair<std::string, int>, model::KubeObject>>();
  auto& specs = *expanded->mutable_spec()->mutable_replica_specs();
  specs.clear();
  for (trainer::RealizedJob& rjob : realized.jobs) {
    plan.replica_types.push_back(rjob.name);
    api::v1::ReplicaSpec& spec = specs[rjob.name];
    spec.set_replicas(rjob.pod_count);
    std::string restart_policy = api::v1::kRestartPolicyOnFailure;
    if (!rjob.pods.empty()) {
      restart_policy = rjob.pods.front()["spec"].value("restartPolicy", restart_policy);
    }
    spec.set_restart_policy(restart_policy);
    for (const json& dep : rjob.depends_on) {
      plan.depends_on[rjob.name].push_back({dep.value("name", ""), dep.value("status", "")});
    }
    for (size_t i = 0; i < rjob.pods.size(); ++i) {
      json& pod = rjob.pods[i];
      pod["metadata"]["ownerReferences"] = owners;
      pod["metadata"]["labels"][model::kLabelAttempt] = absl::StrCat(attempt);
      (*pods)[{rjob.name, static_cast<int>(i)}] = ObjectOf(std::move(pod));
    }
  }

  api::v1::RunPolicy& rp = *expanded->mutable_spec()->mutable_run_policy();
  const json& trainer_spec = JobSpecOf(merged.job_set, plan.leading_type);
  rp.set_backoff_limit(trainer_spec.is_object() && trainer_spec.contains("backoffLimit") &&
                               trainer_spec["backoffLimit"].is_number_integer()
                           ? trainer_spec["backoffLimit"].get<int>()
                           : kJobBackoffLimit);
  rp.set_clean_pod_policy(api::v1::kCleanPodPolicyRunning);
  plan.clean_pod_policy = api::v1::kCleanPodPolicyRunning;
  const json& spec = merged.job_set["spec"];
  if (spec.contains("failurePolicy") && spec["failurePolicy"].is_object()) {
    const int max_restarts = spec["failurePolicy"].value("maxRestarts", 0);
    if (max_restarts > 0) {
      auto& annotations = *expanded->mutable_metadata()->mutable_annotations();
      annotations[api::v1::kAnnotationRestartScope] = "Job";
      annotations[api::v1::kAnnotationMaxRestarts] = absl::StrCat(max_restarts);
    }
  }
  if (spec.contains("successPolicy") && spec["successPolicy"].is_object()) {
    const json& policy = spec["successPolicy"];
    plan.success_any = policy.value("operator", "All") == "Any";
    for (const json& target : policy.value("targetReplicatedJobs", json::array())) {
      if (target.is_string()) plan.success_types.push_back(target.get<std::string>());
    }
  }
  if (plan.success_types.empty()) plan.success_types = plan.replica_types;

  json service = std::move(realized.service);
  service["metadata"]["ownerReferences"] = owners;
  plan.objects.push_back(ObjectOf(std::move(service)));
  if (realized.mpi_hostfile.is_object()) {
    realized.mpi_hostfile["metadata"]["ownerReferences"] = owners;
    plan.objects.push_back(ObjectOf(std::move(realized.mpi_hostfile)));
    plan.objects.push_back(
        ObjectOf(MpiSshAuthSecret(job.metadata().name(), job.metadata().namespace_(), owners)));
  }
  for (json& claim : VolumeClaims(merged.job_set, owners)) {
    plan.objects.push_back(ObjectOf(std::move(claim)));
  }
  if (gang.pod_group.is_object()) plan.objects.push_back(ObjectOf(std::move(gang.pod_group)));
  if (!observed.runtime_from_snapshot) {
    plan.objects.push_back(
        ObjectOf({{"apiVersion", "v1"},
                  {"kind", "ConfigMap"},
                  {"metadata",
                   {{"name", trainer::RuntimeSnapshotName(job)},
                    {"namespace", job.metadata().namespace_()},
                    {"ownerReferences", owners}}},
                  {"data", {{trainer::kRuntimeSnapshotKey, api::v1::codec::ToYaml(runtime)}}}}));
  }
  plan.job = expanded.get();
  plan.expanded = std::move(expanded);
  plan.pod = [pods](const std::string& type, int index) -> absl::StatusOr<model::KubeObject> {
    auto it = pods->find({type, index});
    if (it == pods->end()) {
      return absl::NotFoundError(
          absl::StrCat("no pod ", type, "/", index, " in the TrainJob plan"));
    }
    return it->second;
  };
  return plan;
}

absl::Status AdmitTrainJob(const model::Job& job, const model::ObservedState& observed) {
  const json runtime = json::parse(observed.train_job_runtime, nullptr, false);
  json train_job = api::v1::codec::JobToJson(job);
  train_job.erase("status");
  ASSIGN_OR_RETURN(trainer::admission::Result result,
                   trainer::admission::ValidateTrainJob(
                       train_job, runtime.is_object() ? &runtime : nullptr, nullptr));
  if (!result.allowed()) return absl::InvalidArgumentError(result.Message());
  return absl::OkStatus();
}

absl::Status DefaultTrainJob(model::Job* job, absl::Time now) {
  json spec = json::parse(job->spec().train_job_spec_json(), nullptr, false);
  if (!spec.is_object()) return absl::OkStatus();
  ASSIGN_OR_RETURN(json defaulted,
                   trainer::admission::DefaultTrainJob({{"spec", spec}}, nullptr, now));
  if (defaulted["spec"] != spec) {
    job->mutable_spec()->set_train_job_spec_json(defaulted["spec"].dump());
  }
  return absl::OkStatus();
}

}  // namespace coach::reconcile
