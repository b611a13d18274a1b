#include "api/v1/defaults.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/v1/job_policies.h"
#include "api/v1/kinds.h"

namespace coach::api::v1 {
namespace {

using nlohmann::json;

void NormaliseReplicaTypes(JobKind kind, TrainingJobSpec* spec) {
  std::vector<std::string> keys;
  for (const auto& entry : spec->replica_specs()) keys.push_back(entry.first);
  auto* specs = spec->mutable_replica_specs();
  for (const std::string& key : keys) {
    std::string canonical = CanonicalReplicaType(kind, key);
    if (canonical.empty() || canonical == key || specs->count(canonical) > 0) continue;
    ReplicaSpec moved = specs->at(key);
    specs->erase(key);
    (*specs)[canonical] = std::move(moved);
  }
}

void SetDefaultPort(const KindInfo& info, ReplicaSpec* replica) {
  if (replica->template_json().empty()) return;
  json tmpl = json::parse(replica->template_json(), nullptr, /*allow_exceptions=*/false);
  if (!tmpl.is_object()) return;
  auto spec = tmpl.find("spec");
  if (spec == tmpl.end() || !spec->is_object()) return;
  auto containers = spec->find("containers");
  // Upstream indexes container 0 unconditionally and would panic here; validation reports it.
  if (containers == spec->end() || !containers->is_array() || containers->empty()) return;
  size_t index = 0;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    if (c.is_object() && c.value("name", json()) == json(std::string(info.default_container))) {
      index = i;
      break;
    }
  }
  json& container = (*containers)[index];
  if (!container.is_object()) return;
  json& ports = container["ports"];
  if (ports.is_null()) ports = json::array();
  if (!ports.is_array()) return;
  for (const json& port : ports) {
    if (port.is_object() &&
        port.value("name", json()) == json(std::string(info.default_port_name))) {
      return;
    }
  }
  ports.push_back(
      {{"name", std::string(info.default_port_name)}, {"containerPort", info.default_port}});
  replica->set_template_json(tmpl.dump());
}

void SetElasticDefaults(TrainingJobSpec* spec) {
  if (!spec->has_elastic_policy()) return;
  ElasticPolicy* elastic = spec->mutable_elastic_policy();
  if (elastic->has_min_replicas() && elastic->has_max_replicas()) return;
  if (elastic->has_max_replicas()) {
    elastic->set_min_replicas(elastic->max_replicas());
  } else if (elastic->has_min_replicas()) {
    elastic->set_max_replicas(elastic->min_replicas());
  } else {
    auto worker = spec->replica_specs().find("Worker");
    if (worker == spec->replica_specs().end() || !worker->second.has_replicas()) return;
    elastic->set_min_replicas(worker->second.replicas());
    elastic->set_max_replicas(worker->second.replicas());
  }
}

// What the TrainJob CRD defaults, for a TrainJob that did not come through an API server.
void SetTrainJobDefaults(TrainingJobSpec* spec) {
  json kept = json::parse(spec->train_job_spec_json(), nullptr, false);
  if (!kept.is_object()) return;  // the validation names the field
  json& ref = kept["runtimeRef"];
  if (ref.is_object()) {
    if (!ref.contains("apiGroup")) ref["apiGroup"] = std::string(kTrainerGroup);
    if (!ref.contains("kind")) ref["kind"] = "ClusterTrainingRuntime";
  }
  spec->set_train_job_spec_json(kept.dump());
  RunPolicy* rp = spec->mutable_run_policy();
  if (!rp->has_suspend()) rp->set_suspend(false);
  if (!rp->has_managed_by()) rp->set_managed_by(kTrainJobController);
}

}  // namespace

void SetDefaults(TrainingJob* job) {
  if (job->metadata().namespace_().empty()) job->mutable_metadata()->set_namespace_("default");
  const KindInfo* info = FindKind(job->kind());
  if (info == nullptr) return;
  if (info->kind == TRAIN_JOB) {
    SetTrainJobDefaults(job->mutable_spec());
    return;
  }
  TrainingJobSpec* spec = job->mutable_spec();
  NormaliseReplicaTypes(info->kind, spec);
  const std::string restart(info->default_restart_policy);

  if (info->kind == MPI_JOB) {
    if (!spec->has_mpi_clean_pod_policy() && !spec->run_policy().has_clean_pod_policy()) {
      spec->set_mpi_clean_pod_policy("None");
      spec->mutable_run_policy()->set_clean_pod_policy("None");
    }
    auto* specs = spec->mutable_replica_specs();
    for (const auto& [type, replicas] :
         {std::pair<const char*, int>{"Launcher", 1}, std::pair<const char*, int>{"Worker", 0}}) {
      auto it = specs->find(type);
      if (it == specs->end()) continue;
      if (!it->second.has_replicas()) it->second.set_replicas(replicas);
      if (it->second.restart_policy().empty()) it->second.set_restart_policy(restart);
    }
    return;
  }

  if (!spec->run_policy().has_clean_pod_policy()) {
    spec->mutable_run_policy()->set_clean_pod_policy("None");
  }
  if (info->kind == TF_JOB && !spec->has_success_policy()) spec->set_success_policy("");
  for (auto& [type, replica] : *spec->mutable_replica_specs()) {
    if (!replica.has_replicas()) replica.set_replicas(1);
    if (replica.restart_policy().empty()) replica.set_restart_policy(restart);
    SetDefaultPort(*info, &replica);
  }
  if (info->kind == PYTORCH_JOB || info->kind == PADDLE_JOB) SetElasticDefaults(spec);
  if (info->kind == PYTORCH_JOB) {
    bool elastic_nproc = spec->has_elastic_policy() && spec->elastic_policy().has_n_proc_per_node();
    if (!elastic_nproc && !spec->has_nproc_per_node()) spec->set_nproc_per_node("auto");
  }
}

}  // namespace coach::api::v1
