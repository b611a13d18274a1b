#include "e2e/common/job_manifest.h"

#include <cstdio>
#include <cstdlib>

#include "api/v1/codec/yaml_json.h"
#include "api/v1/kinds.h"

namespace coach::e2e {

using nlohmann::json;

namespace {

const api::v1::KindInfo& KindOrDie(api::v1::JobKind kind) {
  const api::v1::KindInfo* info = api::v1::FindKind(kind);
  if (info == nullptr) {
    std::fprintf(stderr, "JobManifest: no kind %d\n", static_cast<int>(kind));
    std::abort();
  }
  return *info;
}

}  // namespace

JobManifest::JobManifest(api::v1::JobKind kind, std::string name) : kind_(kind) {
  metadata_["name"] = std::move(name);
}

JobManifest& JobManifest::Namespace(const std::string& namespace_) {
  metadata_["namespace"] = namespace_;
  return *this;
}

JobManifest& JobManifest::Annotation(const std::string& key, const std::string& value) {
  metadata_["annotations"][key] = value;
  return *this;
}

JobManifest& JobManifest::Replica(const std::string& type, int count) {
  return Replicas({{type, count}});
}

JobManifest& JobManifest::Replicas(const std::vector<std::pair<std::string, int>>& types) {
  latest_.clear();
  for (const auto& [type, count] : types) {
    size_t i = 0;
    while (i < replicas_.size() && replicas_[i].type != type) ++i;
    if (i == replicas_.size()) {
      ReplicaType added;
      added.type = type;
      added.container_name = std::string(KindOrDie(kind_).default_container);
      added.container["image"] = kDefaultImage;
      replicas_.push_back(std::move(added));
    }
    replicas_[i].count = count;
    latest_.push_back(i);
  }
  return *this;
}

template <typename Change>
JobManifest& JobManifest::ForLatest(Change change) {
  for (size_t i : latest_) change(replicas_[i]);
  return *this;
}

JobManifest& JobManifest::RestartPolicy(const std::string& policy) {
  return ForLatest([&](ReplicaType& r) { r.restart_policy = policy; });
}

JobManifest& JobManifest::Image(const std::string& image) {
  return ForLatest([&](ReplicaType& r) {
    if (image.empty()) {
      r.container.erase("image");
    } else {
      r.container["image"] = image;
    }
  });
}

JobManifest& JobManifest::ContainerName(const std::string& name) {
  return ForLatest([&](ReplicaType& r) { r.container_name = name; });
}

JobManifest& JobManifest::Command(const std::vector<std::string>& command) {
  return ForLatest([&](ReplicaType& r) { r.container["command"] = command; });
}

JobManifest& JobManifest::Env(const std::string& name, const std::string& value) {
  return ForLatest([&](ReplicaType& r) {
    r.container["env"].push_back(json{{"name", name}, {"value", value}});
  });
}

JobManifest& JobManifest::Port(const std::string& name, int container_port) {
  return ForLatest([&](ReplicaType& r) {
    r.container["ports"].push_back(json{{"name", name}, {"containerPort", container_port}});
  });
}

JobManifest& JobManifest::PodAnnotation(const std::string& key, const std::string& value) {
  return ForLatest([&](ReplicaType& r) { r.pod_metadata["annotations"][key] = value; });
}

JobManifest& JobManifest::PodLabel(const std::string& key, const std::string& value) {
  return ForLatest([&](ReplicaType& r) { r.pod_metadata["labels"][key] = value; });
}

JobManifest& JobManifest::KwokExit(int exit_code) {
  return PodAnnotation("coach.test/exit-code", std::to_string(exit_code));
}

JobManifest& JobManifest::KwokExit(int exit_code, int run_seconds) {
  return KwokExit(exit_code).PodAnnotation("coach.test/run-seconds", std::to_string(run_seconds));
}

JobManifest& JobManifest::BackoffLimit(int limit) {
  RunPolicy()["backoffLimit"] = limit;
  return *this;
}

JobManifest& JobManifest::ActiveDeadlineSeconds(int64_t seconds) {
  RunPolicy()["activeDeadlineSeconds"] = seconds;
  return *this;
}

JobManifest& JobManifest::TtlSecondsAfterFinished(int seconds) {
  RunPolicy()["ttlSecondsAfterFinished"] = seconds;
  return *this;
}

JobManifest& JobManifest::CleanPodPolicy(const std::string& policy) {
  RunPolicy()["cleanPodPolicy"] = policy;
  return *this;
}

JobManifest& JobManifest::Suspend(bool suspend) {
  RunPolicy()["suspend"] = suspend;
  return *this;
}

JobManifest& JobManifest::ManagedBy(const std::string& manager) {
  RunPolicy()["managedBy"] = manager;
  return *this;
}

JobManifest& JobManifest::MinAvailable(int count) {
  RunPolicy()["schedulingPolicy"]["minAvailable"] = count;
  return *this;
}

JobManifest& JobManifest::Queue(const std::string& queue) {
  RunPolicy()["schedulingPolicy"]["queue"] = queue;
  return *this;
}

JobManifest& JobManifest::PriorityClass(const std::string& priority_class) {
  RunPolicy()["schedulingPolicy"]["priorityClass"] = priority_class;
  return *this;
}

JobManifest& JobManifest::ScheduleTimeoutSeconds(int seconds) {
  RunPolicy()["schedulingPolicy"]["scheduleTimeoutSeconds"] = seconds;
  return *this;
}

JobManifest& JobManifest::SlotsPerWorker(int slots) {
  spec_["slotsPerWorker"] = slots;
  return *this;
}

JobManifest& JobManifest::ElasticPolicy(const std::string& rdzv_backend, int min_replicas,
                                        int max_replicas) {
  spec_["elasticPolicy"] = {
      {"rdzvBackend", rdzv_backend}, {"minReplicas", min_replicas}, {"maxReplicas", max_replicas}};
  return *this;
}

json JobManifest::Json() const {
  const api::v1::KindInfo& info = KindOrDie(kind_);
  json spec = spec_;
  json& specs = spec[std::string(info.replica_specs_key)];
  specs = json::object();
  for (const ReplicaType& r : replicas_) {
    json container = r.container;
    container["name"] = r.container_name;
    json pod_template = {{"spec", {{"containers", json::array({container})}}}};
    if (!r.pod_metadata.empty()) pod_template["metadata"] = r.pod_metadata;
    json replica = {{"replicas", r.count}, {"template", pod_template}};
    if (!r.restart_policy.empty()) replica["restartPolicy"] = r.restart_policy;
    specs[r.type] = replica;
  }
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", std::string(info.name)},
          {"metadata", metadata_},
          {"spec", spec}};
}

std::string JobManifest::Yaml() const { return api::v1::codec::ToYaml(Json()); }

}  // namespace coach::e2e
