#include "operator/reconcile/desired_objects.h"

#include <map>
#include <optional>
#include <string>

#include "api/v1/job_policies.h"
#include "common/status_macros.h"
#include "operator/model/kubernetes_address_plan.h"
#include "operator/model/listen_ports.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/framework_env.h"
#include "operator/reconcile/gang.h"
#include "operator/reconcile/karpenter_placement.h"
#include "operator/reconcile/launcher_wrap.h"
#include "operator/reconcile/master_wait.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/reconcile/mpi_objects.h"
#include "operator/reconcile/progress_report_env.h"
#include "operator/reconcile/recovery_policy.h"
#include "operator/reconcile/train_job_elastic.h"
#include "operator/trainer/merge_runtime.h"
#include "operator/trainer/runtime_lookup.h"

namespace coach::reconcile {

using model::Json;
using model::KubeObject;

namespace {

// The operator restarts a job-scoped job as a whole: a kubelet restarting one container in
// place would bring one rank back into a rendezvous its peers have left, so the pod never
// restarts on its own. Every container learns the attempt (torchrun's name for it too), and,
// when its coach-launch is to restart its ranks in place, that it is.
void StampAttempt(int attempt, bool in_place, Json& tmpl) {
  tmpl["spec"]["restartPolicy"] = api::v1::kRestartPolicyNever;
  tmpl["metadata"]["labels"][model::kLabelAttempt] = std::to_string(attempt);
  if (Json* containers = MutableContainers(tmpl)) {
    for (Json& c : *containers) {
      if (!c.is_object()) continue;
      AppendEnv(c, kEnvAttempt, std::to_string(attempt));
      AppendEnv(c, "TORCHELASTIC_RESTART_COUNT", std::to_string(attempt));
      if (in_place) AppendEnv(c, kEnvRestartMode, "InPlace");
    }
  }
}

}  // namespace

absl::StatusOr<KubeObject> DesiredPod(const model::Job& job, const std::string& type, int index,
                                      const model::ReconcileConfig& config) {
  ASSIGN_OR_RETURN(const api::v1::KindInfo* kind, KindOf(job));
  (void)kind;
  ASSIGN_OR_RETURN(Json tmpl, ParseTemplate(job, type));
  if (!tmpl.contains("metadata") || !tmpl["metadata"].is_object())
    tmpl["metadata"] = Json::object();
  if (!tmpl.contains("spec") || !tmpl["spec"].is_object()) tmpl["spec"] = Json::object();
  Json& meta = tmpl["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object()) meta["labels"] = Json::object();
  for (const auto& [k, v] : ReplicaLabels(job, type, index)) meta["labels"][k] = v;
  if (IsMasterRole(job, type, index)) meta["labels"][kLabelJobRole] = "master";

  auto plan = PlanOf(config);
  ReplicaRef ref{job, type, index, *plan};
  if (job.kind() == api::v1::MPI_JOB) {
    RETURN_IF_ERROR(DecorateMpiPod(ref, config, tmpl));
  } else {
    RETURN_IF_ERROR(SetClusterSpec(ref, tmpl));
  }
  AddMlflowEnv(job, config.mlflow, type, index, tmpl);
  WrapWithLauncher(job, config, tmpl);
  AddProgressReporting(job, config, tmpl);
  AddMasterWait(job, type, config, tmpl);
  const std::string policy = RestartPolicy(job, type);
  tmpl["spec"]["restartPolicy"] =
      policy == api::v1::kRestartPolicyExitCode ? api::v1::kRestartPolicyNever : policy;
  if (JobScoped(job, config)) {
    StampAttempt(job.status().coach().attempt(), RestartsInPlace(job, config), tmpl);
  }
  DecorateForGang(job, type, config, tmpl);
  RETURN_IF_ERROR(PlaceForKarpenter(job, config, tmpl));

  const std::string name = ReplicaName(job, type, index);
  Json metadata = meta;
  metadata["name"] = name;
  metadata["namespace"] = job.metadata().namespace_();
  metadata["ownerReferences"] = OwnerReferences(job);
  if (metadata.contains("annotations") && metadata["annotations"].empty()) {
    metadata.erase("annotations");
  }
  Json body = {
      {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", tmpl["spec"]}};
  return KubeObject{"v1", "Pod", name, job.metadata().namespace_(), std::move(body)};
}

namespace {

// Off Kubernetes (the local backend's plan) the trainer's first pod is not reachable by the
// name Trainer v2 gives it: the variables that name it point at the plan's host and the
// rendezvous port the backend reserved for the job.
void ReaddressTrainJobPod(const model::Job& job, const model::AddressPlan& plan, Json& tmpl) {
  const std::string host = plan.Host(job, model::kTrainerReplicatedJob, 0);
  const std::string port = std::to_string(plan.Port(
      job, model::kTrainerReplicatedJob, 0, model::kTrainerPortName, trainer::kTrainerPort));
  const std::map<std::string, std::string> values = {{"PET_MASTER_ADDR", host},
                                                     {"PET_MASTER_PORT", port},
                                                     {"JAX_COORDINATOR_ADDRESS", host + ":" + port},
                                                     {"DMLC_TRACKER_URI", host},
                                                     {"DMLC_TRACKER_PORT", port}};
  Json* containers = MutableContainers(tmpl);
  if (containers == nullptr) return;
  for (Json& c : *containers) {
    if (!c.is_object() || !c.contains("env") || !c["env"].is_array()) continue;
    for (Json& e : c["env"]) {
      auto it = values.find(e.value("name", ""));
      if (it != values.end() && e.contains("value")) e["value"] = it->second;
    }
  }
}

}  // namespace

absl::Status DecoratePlannedPod(const model::Job& job, const std::string& type, int index,
                                const model::ReconcileConfig& config, KubeObject& pod) {
  Json tmpl = {{"metadata", pod.body["metadata"]}, {"spec", pod.body["spec"]}};
  if (config.address_plan != nullptr) ReaddressTrainJobPod(job, *config.address_plan, tmpl);
  // After the readdressing: the rendezvous endpoint is the address node 0 has there.
  if (std::optional<ElasticRange> elastic = ElasticWorkers(job); elastic && type == elastic->type) {
    SetElasticNodeEnv(job, *elastic, index, PlanOf(config)->SharedHost(), tmpl);
  }
  AddMlflowEnv(job, config.mlflow, type, index, tmpl);
  WrapWithLauncher(job, config, tmpl);
  AddProgressReporting(job, config, tmpl);
  if (JobScoped(job, config)) {
    StampAttempt(job.status().coach().attempt(), RestartsInPlace(job, config), tmpl);
  }
  RETURN_IF_ERROR(PlaceForKarpenter(job, config, tmpl));
  pod.body["metadata"] = std::move(tmpl["metadata"]);
  pod.body["spec"] = std::move(tmpl["spec"]);
  return absl::OkStatus();
}

absl::StatusOr<KubeObject> DesiredService(const model::Job& job, const std::string& type,
                                          int index) {
  ASSIGN_OR_RETURN(const api::v1::KindInfo* kind, KindOf(job));
  ASSIGN_OR_RETURN(Json tmpl, ParseTemplate(job, type));
  std::map<std::string, int> ports;
  Json* containers = MutableContainers(tmpl);
  if (containers != nullptr) {
    for (const Json& c : *containers) {
      if (c.value("name", "") != kind->default_container) continue;
      if (!c.contains("ports") || !c["ports"].is_array()) continue;
      for (const Json& p : c["ports"]) {
        if (p.contains("containerPort") && p["containerPort"].is_number_integer()) {
          ports[p.value("name", "")] = p["containerPort"].get<int>();
        }
      }
    }
  }
  Json service_ports = Json::array();
  for (const auto& [name, port] : ports) service_ports.push_back({{"name", name}, {"port", port}});
  Json labels = Json::object();
  for (const auto& [k, v] : ReplicaLabels(job, type, index)) labels[k] = v;
  const std::string name = ReplicaName(job, type, index);
  Json body = {{"apiVersion", "v1"},
               {"kind", "Service"},
               {"metadata",
                {{"name", name},
                 {"namespace", job.metadata().namespace_()},
                 {"labels", labels},
                 {"ownerReferences", OwnerReferences(job)}}},
               {"spec", {{"clusterIP", "None"}, {"selector", labels}, {"ports", service_ports}}}};
  return KubeObject{"v1", "Service", name, job.metadata().namespace_(), std::move(body)};
}

}  // namespace coach::reconcile
