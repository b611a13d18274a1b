#include "operator/model/testing/job_builder.h"

#include <google/protobuf/util/time_util.h>

#include <nlohmann/json.hpp>

namespace coach::reconcile::testing {
namespace {

google::protobuf::Timestamp ToProto(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

std::string DefaultTemplate(const api::v1::KindInfo& kind) {
  nlohmann::json container = {{"name", std::string(kind.default_container)}, {"image", "busybox"}};
  if (kind.default_port != 0) {
    container["ports"] = nlohmann::json::array(
        {{{"name", std::string(kind.default_port_name)}, {"containerPort", kind.default_port}}});
  }
  return nlohmann::json({{"spec", {{"containers", nlohmann::json::array({container})}}}}).dump();
}

}  // namespace

JobBuilder::JobBuilder(api::v1::JobKind kind, std::string ns, std::string name) {
  job_.set_kind(kind);
  job_.mutable_metadata()->set_namespace_(std::move(ns));
  job_.mutable_metadata()->set_name(std::move(name));
  job_.mutable_metadata()->set_uid("uid-" + job_.metadata().name());
}

JobBuilder& JobBuilder::Replicas(const std::string& type, int n) {
  const api::v1::KindInfo* kind = api::v1::FindKind(job_.kind());
  api::v1::ReplicaSpec& spec = (*job_.mutable_spec()->mutable_replica_specs())[type];
  spec.set_replicas(n);
  if (spec.template_json().empty()) spec.set_template_json(DefaultTemplate(*kind));
  if (spec.restart_policy().empty()) {
    spec.set_restart_policy(restart_policy_.value_or(std::string(kind->default_restart_policy)));
  }
  return *this;
}

JobBuilder& JobBuilder::RestartPolicy(const std::string& policy) {
  restart_policy_ = policy;
  for (auto& [type, spec] : *job_.mutable_spec()->mutable_replica_specs()) {
    spec.set_restart_policy(policy);
  }
  return *this;
}

JobBuilder& JobBuilder::RestartPolicy(const std::string& type, const std::string& policy) {
  (*job_.mutable_spec()->mutable_replica_specs())[type].set_restart_policy(policy);
  return *this;
}

JobBuilder& JobBuilder::Template(const std::string& type, const std::string& template_json) {
  (*job_.mutable_spec()->mutable_replica_specs())[type].set_template_json(template_json);
  return *this;
}

JobBuilder& JobBuilder::Uid(const std::string& uid) {
  job_.mutable_metadata()->set_uid(uid);
  return *this;
}
JobBuilder& JobBuilder::Annotation(const std::string& key, const std::string& value) {
  (*job_.mutable_metadata()->mutable_annotations())[key] = value;
  return *this;
}
JobBuilder& JobBuilder::BackoffLimit(int n) {
  job_.mutable_spec()->mutable_run_policy()->set_backoff_limit(n);
  return *this;
}
JobBuilder& JobBuilder::ActiveDeadlineSeconds(int64_t s) {
  job_.mutable_spec()->mutable_run_policy()->set_active_deadline_seconds(s);
  return *this;
}
JobBuilder& JobBuilder::TtlSecondsAfterFinished(int s) {
  job_.mutable_spec()->mutable_run_policy()->set_ttl_seconds_after_finished(s);
  return *this;
}
JobBuilder& JobBuilder::CleanPodPolicy(const std::string& p) {
  job_.mutable_spec()->mutable_run_policy()->set_clean_pod_policy(p);
  return *this;
}
JobBuilder& JobBuilder::Suspend(bool s) {
  job_.mutable_spec()->mutable_run_policy()->set_suspend(s);
  return *this;
}
JobBuilder& JobBuilder::ManagedBy(const std::string& m) {
  job_.mutable_spec()->mutable_run_policy()->set_managed_by(m);
  return *this;
}
JobBuilder& JobBuilder::MinAvailable(int n) {
  job_.mutable_spec()->mutable_run_policy()->mutable_scheduling_policy()->set_min_available(n);
  return *this;
}
JobBuilder& JobBuilder::Queue(const std::string& q) {
  job_.mutable_spec()->mutable_run_policy()->mutable_scheduling_policy()->set_queue(q);
  return *this;
}
JobBuilder& JobBuilder::PriorityClass(const std::string& p) {
  job_.mutable_spec()->mutable_run_policy()->mutable_scheduling_policy()->set_priority_class(p);
  return *this;
}
JobBuilder& JobBuilder::MinResource(const std::string& name, const std::string& quantity) {
  (*job_.mutable_spec()
        ->mutable_run_policy()
        ->mutable_scheduling_policy()
        ->mutable_min_resources())[name] = quantity;
  return *this;
}
JobBuilder& JobBuilder::ScheduleTimeoutSeconds(int s) {
  job_.mutable_spec()
      ->mutable_run_policy()
      ->mutable_scheduling_policy()
      ->set_schedule_timeout_seconds(s);
  return *this;
}
JobBuilder& JobBuilder::NprocPerNode(const std::string& n) {
  job_.mutable_spec()->set_nproc_per_node(n);
  return *this;
}
JobBuilder& JobBuilder::Elastic(std::optional<int> min, std::optional<int> max) {
  api::v1::ElasticPolicy* ep = job_.mutable_spec()->mutable_elastic_policy();
  if (min) ep->set_min_replicas(*min);
  if (max) ep->set_max_replicas(*max);
  return *this;
}
JobBuilder& JobBuilder::RdzvId(const std::string& id) {
  job_.mutable_spec()->mutable_elastic_policy()->set_rdzv_id(id);
  return *this;
}
JobBuilder& JobBuilder::SlotsPerWorker(int n) {
  job_.mutable_spec()->set_slots_per_worker(n);
  return *this;
}
JobBuilder& JobBuilder::EnableDynamicWorker(bool b) {
  job_.mutable_spec()->set_enable_dynamic_worker(b);
  return *this;
}
JobBuilder& JobBuilder::SuccessPolicy(const std::string& p) {
  job_.mutable_spec()->set_success_policy(p);
  return *this;
}
JobBuilder& JobBuilder::StartTime(absl::Time t) {
  *job_.mutable_status()->mutable_start_time() = ToProto(t);
  return *this;
}
JobBuilder& JobBuilder::CompletionTime(absl::Time t) {
  *job_.mutable_status()->mutable_completion_time() = ToProto(t);
  return *this;
}
JobBuilder& JobBuilder::Condition(const std::string& type, const std::string& status,
                                  absl::Time at) {
  const api::v1::KindInfo* kind = api::v1::FindKind(job_.kind());
  api::v1::JobCondition* c = job_.mutable_status()->add_conditions();
  c->set_type(type);
  c->set_status(status);
  c->set_reason(std::string(kind->name) + type);
  *c->mutable_last_update_time() = ToProto(at);
  *c->mutable_last_transition_time() = ToProto(at);
  return *this;
}

JobBuilder MakePyTorchJob(const std::string& ns, const std::string& name) {
  return JobBuilder(api::v1::PYTORCH_JOB, ns, name);
}
JobBuilder MakeTFJob(const std::string& ns, const std::string& name) {
  return JobBuilder(api::v1::TF_JOB, ns, name);
}
JobBuilder MakeXGBoostJob(const std::string& ns, const std::string& name) {
  return JobBuilder(api::v1::XGBOOST_JOB, ns, name);
}
JobBuilder MakeMPIJob(const std::string& ns, const std::string& name) {
  return JobBuilder(api::v1::MPI_JOB, ns, name);
}
JobBuilder MakePaddleJob(const std::string& ns, const std::string& name) {
  return JobBuilder(api::v1::PADDLE_JOB, ns, name);
}
JobBuilder MakeJAXJob(const std::string& ns, const std::string& name) {
  return JobBuilder(api::v1::JAX_JOB, ns, name);
}

model::Job SeedPyTorchJob() {
  return MakePyTorchJob("default", "pytorch-mnist")
      .Master(1)
      .Workers(2)
      .NprocPerNode("auto")
      .Build();
}

}  // namespace coach::reconcile::testing
