#include "operator/trainer/runtime_jobs.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/trainer/json_fields.h"

namespace coach::trainer {

using nlohmann::json;
using value_t = nlohmann::json::value_t;

namespace {

absl::StatusOr<std::vector<RuntimeContainer>> ReadContainers(const json& pod, const char* key,
                                                             const std::string& path) {
  std::vector<RuntimeContainer> out;
  ASSIGN_OR_RETURN(const json* list, ObjectList(pod, key, path));
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& c = (*list)[i];
    const std::string cp = absl::StrCat(path, "[", i, "]");
    RuntimeContainer rc;
    ASSIGN_OR_RETURN(rc.name, StringMember(c, "name", cp + ".name"));
    ASSIGN_OR_RETURN(const json* mounts, ObjectList(c, "volumeMounts", cp + ".volumeMounts"));
    if (mounts != nullptr) {
      for (size_t m = 0; m < mounts->size(); ++m) {
        ASSIGN_OR_RETURN(
            std::string name,
            StringMember((*mounts)[m], "name", absl::StrCat(cp, ".volumeMounts[", m, "].name")));
        rc.volume_mounts.push_back(std::move(name));
      }
    }
    out.push_back(std::move(rc));
  }
  return out;
}

absl::StatusOr<RuntimeJob> ReadJob(const json& job, const std::string& path) {
  RuntimeJob out;
  ASSIGN_OR_RETURN(out.name, StringMember(job, "name", path + ".name"));
  ASSIGN_OR_RETURN(const json* replicas,
                   Member(job, "replicas", value_t::number_integer, path + ".replicas"));
  if (replicas != nullptr) out.replicas = replicas->get<int64_t>();
  ASSIGN_OR_RETURN(const json* tmpl, Member(job, "template", value_t::object, path + ".template"));
  if (tmpl == nullptr) return out;
  ASSIGN_OR_RETURN(const json* meta,
                   Member(*tmpl, "metadata", value_t::object, path + ".template.metadata"));
  if (meta != nullptr) {
    ASSIGN_OR_RETURN(const json* labels,
                     StringMap(*meta, "labels", path + ".template.metadata.labels"));
    if (labels != nullptr) {
      out.has_labels = true;
      auto it = labels->find("trainer.kubeflow.org/trainjob-ancestor-step");
      if (it != labels->end()) out.ancestor = it->get<std::string>();
    }
  }
  const std::string sp = path + ".template.spec";
  ASSIGN_OR_RETURN(const json* spec, Member(*tmpl, "spec", value_t::object, sp));
  if (spec == nullptr) return out;
  ASSIGN_OR_RETURN(const json* pod_tmpl,
                   Member(*spec, "template", value_t::object, sp + ".template"));
  if (pod_tmpl == nullptr) return out;
  const std::string pp = sp + ".template.spec";
  ASSIGN_OR_RETURN(const json* pod, Member(*pod_tmpl, "spec", value_t::object, pp));
  if (pod == nullptr) return out;
  ASSIGN_OR_RETURN(out.containers, ReadContainers(*pod, "containers", pp + ".containers"));
  ASSIGN_OR_RETURN(out.init_containers,
                   ReadContainers(*pod, "initContainers", pp + ".initContainers"));
  auto containers = pod->find("containers");
  if (containers != pod->end()) out.containers_json = *containers;
  return out;
}

}  // namespace

bool RuntimeJob::HasContainer(const std::string& name) const {
  for (const auto* list : {&containers, &init_containers}) {
    for (const RuntimeContainer& c : *list) {
      if (c.name == name) return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<RuntimeJob>> ReadRuntimeJobs(const json& runtime) {
  std::vector<RuntimeJob> out;
  if (!runtime.is_object()) return absl::InvalidArgumentError("runtime: must be an object");
  ASSIGN_OR_RETURN(const json* spec, Member(runtime, "spec", value_t::object, "spec"));
  if (spec == nullptr) return out;
  ASSIGN_OR_RETURN(const json* tmpl, Member(*spec, "template", value_t::object, "spec.template"));
  if (tmpl == nullptr) return out;
  ASSIGN_OR_RETURN(const json* js, Member(*tmpl, "spec", value_t::object, "spec.template.spec"));
  if (js == nullptr) return out;
  const std::string path = "spec.template.spec.replicatedJobs";
  ASSIGN_OR_RETURN(const json* jobs, ObjectList(*js, "replicatedJobs", path));
  if (jobs == nullptr) return out;
  for (size_t i = 0; i < jobs->size(); ++i) {
    ASSIGN_OR_RETURN(RuntimeJob job, ReadJob((*jobs)[i], absl::StrCat(path, "[", i, "]")));
    out.push_back(std::move(job));
  }
  return out;
}

absl::StatusOr<std::string> Label(const json& object, const char* key) {
  if (!object.is_object()) return absl::InvalidArgumentError("object: must be an object");
  ASSIGN_OR_RETURN(const json* meta, Member(object, "metadata", value_t::object, "metadata"));
  if (meta == nullptr) return std::string();
  ASSIGN_OR_RETURN(const json* labels, StringMap(*meta, "labels", "metadata.labels"));
  if (labels == nullptr) return std::string();
  auto it = labels->find(key);
  return it == labels->end() ? std::string() : it->get<std::string>();
}

absl::StatusOr<std::string> ObjectName(const json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("object: must be an object");
  ASSIGN_OR_RETURN(const json* meta, Member(object, "metadata", value_t::object, "metadata"));
  if (meta == nullptr) return std::string();
  return StringMember(*meta, "name", "metadata.name");
}

}  // namespace coach::trainer
