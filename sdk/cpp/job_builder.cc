#include "sdk/cpp/job_builder.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/kinds.h"

namespace coach::sdk {

using api::v1::JobKind;

JobBuilder::JobBuilder(JobKind kind, const std::string& name) {
  job_.set_kind(kind);
  job_.mutable_metadata()->set_name(name);
}

JobBuilder JobBuilder::ForKind(JobKind kind, const std::string& name) {
  return JobBuilder(kind, name);
}
JobBuilder JobBuilder::PyTorch(const std::string& name) {
  return JobBuilder(api::v1::PYTORCH_JOB, name);
}
JobBuilder JobBuilder::TensorFlow(const std::string& name) {
  return JobBuilder(api::v1::TF_JOB, name);
}
JobBuilder JobBuilder::XGBoost(const std::string& name) {
  return JobBuilder(api::v1::XGBOOST_JOB, name);
}
JobBuilder JobBuilder::MPI(const std::string& name) { return JobBuilder(api::v1::MPI_JOB, name); }
JobBuilder JobBuilder::Paddle(const std::string& name) {
  return JobBuilder(api::v1::PADDLE_JOB, name);
}
JobBuilder JobBuilder::JAX(const std::string& name) { return JobBuilder(api::v1::JAX_JOB, name); }

JobBuilder& JobBuilder::Namespace(const std::string& namespace_) {
  job_.mutable_metadata()->set_namespace_(namespace_);
  return *this;
}
JobBuilder& JobBuilder::Label(const std::string& key, const std::string& value) {
  (*job_.mutable_metadata()->mutable_labels())[key] = value;
  return *this;
}
JobBuilder& JobBuilder::Annotation(const std::string& key, const std::string& value) {
  (*job_.mutable_metadata()->mutable_annotations())[key] = value;
  return *this;
}
JobBuilder& JobBuilder::Image(const std::string& image) {
  image_ = image;
  return *this;
}
JobBuilder& JobBuilder::Command(const std::vector<std::string>& command) {
  command_ = command;
  return *this;
}
JobBuilder& JobBuilder::Args(const std::vector<std::string>& args) {
  args_ = args;
  return *this;
}
JobBuilder& JobBuilder::Env(const std::string& name, const std::string& value) {
  for (auto& [existing, existing_value] : env_) {
    if (existing == name) {
      existing_value = value;
      return *this;
    }
  }
  env_.emplace_back(name, value);
  return *this;
}
JobBuilder& JobBuilder::WorkingDir(const std::string& dir) {
  working_dir_ = dir;
  return *this;
}
JobBuilder& JobBuilder::ImagePullPolicy(const std::string& policy) {
  image_pull_policy_ = policy;
  return *this;
}
JobBuilder& JobBuilder::Resource(const std::string& name, const std::string& quantity) {
  resources_[name] = quantity;
  return *this;
}
JobBuilder& JobBuilder::Replicas(const std::string& replica_type, int32_t count) {
  for (auto& [type, existing] : replicas_) {
    if (type == replica_type) {
      existing = count;
      return *this;
    }
  }
  replicas_.emplace_back(replica_type, count);
  return *this;
}
JobBuilder& JobBuilder::RestartPolicy(const std::string& policy) {
  restart_policy_ = policy;
  return *this;
}
JobBuilder& JobBuilder::NprocPerNode(const std::string& nproc) {
  job_.mutable_spec()->set_nproc_per_node(nproc);
  return *this;
}
JobBuilder& JobBuilder::Elastic(int32_t min_replicas, int32_t max_replicas) {
  job_.mutable_spec()->mutable_elastic_policy()->set_min_replicas(min_replicas);
  job_.mutable_spec()->mutable_elastic_policy()->set_max_replicas(max_replicas);
  return *this;
}
JobBuilder& JobBuilder::SlotsPerWorker(int32_t slots) {
  job_.mutable_spec()->set_slots_per_worker(slots);
  return *this;
}
JobBuilder& JobBuilder::BackoffLimit(int32_t limit) {
  job_.mutable_spec()->mutable_run_policy()->set_backoff_limit(limit);
  return *this;
}
JobBuilder& JobBuilder::ActiveDeadlineSeconds(int64_t seconds) {
  job_.mutable_spec()->mutable_run_policy()->set_active_deadline_seconds(seconds);
  return *this;
}
JobBuilder& JobBuilder::TtlSecondsAfterFinished(int32_t seconds) {
  job_.mutable_spec()->mutable_run_policy()->set_ttl_seconds_after_finished(seconds);
  return *this;
}
JobBuilder& JobBuilder::CleanPodPolicy(const std::string& policy) {
  job_.mutable_spec()->mutable_run_policy()->set_clean_pod_policy(policy);
  return *this;
}
JobBuilder& JobBuilder::Suspend(bool suspend) {
  job_.mutable_spec()->mutable_run_policy()->set_suspend(suspend);
  return *this;
}
JobBuilder& JobBuilder::Queue(const std::string& queue) {
  job_.mutable_spec()->mutable_run_policy()->mutable_scheduling_policy()->set_queue(queue);
  return *this;
}

absl::StatusOr<api::v1::TrainingJob> JobBuilder::Build() const {
  const api::v1::KindInfo* info = api::v1::FindKind(job_.kind());
  if (info == nullptr) return absl::InvalidArgumentError("kind: unsupported job kind");
  const std::string kind_name(info->name);
  std::vector<std::string> errors;
  if (job_.metadata().name().empty()) errors.push_back("metadata.name: required");
  if (image_.empty()) errors.push_back("image: required");
  if (replicas_.empty())
    errors.push_back(absl::StrCat("replicas: ", kind_name, " needs at least one replica type"));
  const bool pytorch = job_.kind() == api::v1::PYTORCH_JOB;
  if (job_.spec().has_nproc_per_node() && !pytorch) {
    errors.push_back(absl::StrCat("nprocPerNode: only PyTorchJob has it, not ", kind_name));
  }
  if (job_.spec().has_elastic_policy() && !pytorch && job_.kind() != api::v1::PADDLE_JOB) {
    errors.push_back(
        absl::StrCat("elasticPolicy: only PyTorchJob and PaddleJob have it, not ", kind_name));
  }
  if (job_.spec().has_slots_per_worker() && job_.kind() != api::v1::MPI_JOB) {
    errors.push_back(absl::StrCat("slotsPerWorker: only MPIJob has it, not ", kind_name));
  }

  nlohmann::json container = {{"name", std::string(info->default_container)}, {"image", image_}};
  if (!command_.empty()) container["command"] = command_;
  if (!args_.empty()) container["args"] = args_;
  if (!working_dir_.empty()) container["workingDir"] = working_dir_;
  if (!image_pull_policy_.empty()) container["imagePullPolicy"] = image_pull_policy_;
  if (!env_.empty()) {
    nlohmann::json env = nlohmann::json::array();
    for (const auto& [name, value] : env_) env.push_back({{"name", name}, {"value", value}});
    container["env"] = env;
  }
  if (!resources_.empty()) {
    nlohmann::json limits(resources_);
    container["resources"] = {{"limits", limits}, {"requests", limits}};
  }
  nlohmann::json pod_template = {{"spec", {{"containers", nlohmann::json::array({container})}}}};
  const std::string template_json = pod_template.dump();

  api::v1::TrainingJob job = job_;
  for (const auto& [type, count] : replicas_) {
    std::string canonical = api::v1::CanonicalReplicaType(job_.kind(), type);
    if (canonical.empty()) {
      std::vector<std::string> known(info->replica_types.begin(), info->replica_types.end());
      errors.push_back(absl::StrCat("replicas.", type, ": ", kind_name,
                                    " has no such replica type (", absl::StrJoin(known, ", "),
                                    ")"));
      continue;
    }
    if (count < 0) {
      errors.push_back(absl::StrCat("replicas.", canonical, ": must not be negative, got ", count));
    }
    api::v1::ReplicaSpec& spec = (*job.mutable_spec()->mutable_replica_specs())[canonical];
    spec.set_replicas(count);
    spec.set_restart_policy(restart_policy_);
    spec.set_template_json(template_json);
  }
  if (!errors.empty()) return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
  return job;
}

}  // namespace coach::sdk
