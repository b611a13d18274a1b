#include "operator/model/replicas.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/job_policies.h"

namespace coach::reconcile {

absl::StatusOr<const api::v1::KindInfo*> KindOf(const Job& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", job.metadata().name(), ": kind is not set"));
  }
  return info;
}

std::vector<std::string> ReplicaTypes(const Job& job) {
  std::vector<std::string> types;
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  if (info != nullptr) {
    for (std::string_view t : info->replica_types) {
      if (job.spec().replica_specs().count(std::string(t)) > 0) types.emplace_back(t);
    }
  }
  std::vector<std::string> unknown;
  for (const auto& [type, spec] : job.spec().replica_specs()) {
    if (std::find(types.begin(), types.end(), type) == types.end()) unknown.push_back(type);
  }
  std::sort(unknown.begin(), unknown.end());
  types.insert(types.end(), unknown.begin(), unknown.end());
  return types;
}

int Replicas(const Job& job, std::string_view type) {
  auto it = job.spec().replica_specs().find(std::string(type));
  if (it == job.spec().replica_specs().end()) return 0;
  return it->second.has_replicas() ? it->second.replicas() : 1;
}

int TotalReplicas(const Job& job) {
  int total = 0;
  for (const auto& [type, spec] : job.spec().replica_specs()) total += Replicas(job, type);
  return total;
}

bool HasReplicaType(const Job& job, std::string_view type) {
  return job.spec().replica_specs().count(std::string(type)) > 0;
}

std::string Lower(std::string_view s) { return absl::AsciiStrToLower(std::string(s)); }

Json& EnsureArray(Json& object, const char* key) {
  if (!object.contains(key) || !object[key].is_array()) object[key] = Json::array();
  return object[key];
}

const std::string* AnnotationOf(const Job& job, const std::string& key) {
  const auto& annotations = job.metadata().annotations();
  auto it = annotations.find(key);
  return it == annotations.end() ? nullptr : &it->second;
}

std::string ReplicaName(const Job& job, std::string_view type, int index) {
  if (job.kind() == api::v1::MPI_JOB && type == "Launcher") {
    return absl::StrCat(job.metadata().name(), "-launcher");
  }
  std::string name = absl::StrCat(job.metadata().name(), "-", Lower(type), "-", index);
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

std::string RestartPolicy(const Job& job, std::string_view type) {
  auto it = job.spec().replica_specs().find(std::string(type));
  if (it != job.spec().replica_specs().end() && !it->second.restart_policy().empty()) {
    return it->second.restart_policy();
  }
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return info == nullptr ? api::v1::kRestartPolicyNever : std::string(info->default_restart_policy);
}

absl::StatusOr<Json> ParseTemplate(const Job& job, std::string_view type) {
  auto it = job.spec().replica_specs().find(std::string(type));
  if (it == job.spec().replica_specs().end() || it->second.template_json().empty()) {
    return Json::object();
  }
  Json parsed = Json::parse(it->second.template_json(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.replicaSpecs[", std::string(type), "].template: not a JSON object"));
  }
  return parsed;
}

std::optional<size_t> DefaultContainerIndex(const Json& pod_template,
                                            const api::v1::KindInfo& kind) {
  const Json* containers = nullptr;
  if (pod_template.contains("spec") && pod_template["spec"].contains("containers") &&
      pod_template["spec"]["containers"].is_array()) {
    containers = &pod_template["spec"]["containers"];
  }
  if (containers == nullptr || containers->empty()) return std::nullopt;
  if (kind.kind != api::v1::MPI_JOB) {
    for (size_t i = 0; i < containers->size(); ++i) {
      const Json& c = (*containers)[i];
      if (c.value("name", "") == kind.default_container) return i;
    }
  }
  return 0;
}

absl::StatusOr<int> DeclaredPort(const Job& job, std::string_view type,
                                 std::string_view port_name) {
  auto kind = KindOf(job);
  if (!kind.ok()) return kind.status();
  auto tmpl = ParseTemplate(job, type);
  if (!tmpl.ok()) return tmpl.status();
  const Json& containers = (*tmpl)["spec"]["containers"];
  if (containers.is_array()) {
    for (const Json& c : containers) {
      if (c.value("name", "") != (*kind)->default_container) continue;
      if (!c.contains("ports") || !c["ports"].is_array()) continue;
      for (const Json& p : c["ports"]) {
        if (p.value("name", "") == port_name && p.contains("containerPort") &&
            p["containerPort"].is_number_integer()) {
          return p["containerPort"].get<int>();
        }
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("spec.replicaSpecs[", std::string(type), "]: container ",
                                          std::string((*kind)->default_container),
                                          " has no port named ", std::string(port_name)));
}

bool IsMasterRole(const Job& job, std::string_view type, int index) {
  switch (job.kind()) {
    case api::v1::PYTORCH_JOB:
      if (HasReplicaType(job, "Master")) return type == "Master";
      return type == "Worker" && index == 0;
    case api::v1::TF_JOB:
      if (HasReplicaType(job, "Chief") || HasReplicaType(job, "Master")) {
        return type == "Chief" || type == "Master";
      }
      return type == "Worker" && index == 0;
    case api::v1::XGBOOST_JOB:
    case api::v1::PADDLE_JOB:
      return type == "Master";
    case api::v1::JAX_JOB:
      return index == 0;
    case api::v1::MPI_JOB:
      return type == "Launcher";
    default:
      return false;
  }
}

std::map<std::string, std::string> JobLabels(const Job& job) {
  std::string name = job.metadata().name();
  std::replace(name.begin(), name.end(), '/', '-');
  return {{kLabelOperatorName, api::v1::OperatorName(job.kind())}, {kLabelJobName, name}};
}

std::map<std::string, std::string> ReplicaLabels(const Job& job, std::string_view type, int index) {
  auto labels = JobLabels(job);
  labels[kLabelReplicaType] = Lower(type);
  labels[kLabelReplicaIndex] = std::to_string(index);
  return labels;
}

std::string ReplicaSelector(const Job& job, std::string_view type) {
  auto labels = JobLabels(job);
  labels[kLabelReplicaType] = Lower(type);
  return absl::StrJoin(labels, ",", absl::PairFormatter("="));
}

Json OwnerReferences(const Job& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return Json::array({{
      {"apiVersion", std::string(info == nullptr ? api::v1::kApiVersion : info->api_version)},
      {"kind", info == nullptr ? "" : std::string(info->name)},
      {"name", job.metadata().name()},
      {"uid", job.metadata().uid()},
      {"controller", true},
      {"blockOwnerDeletion", true},
  }});
}

Json* MutableContainers(Json& pod_template) {
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return nullptr;
  auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array()) return nullptr;
  return &*containers;
}

void AppendEnv(Json& container, std::string_view name, std::string_view value) {
  if (!container.contains("env") || !container["env"].is_array()) container["env"] = Json::array();
  container["env"].push_back({{"name", std::string(name)}, {"value", std::string(value)}});
}

void AppendEnvFieldRef(Json& container, std::string_view name, std::string_view field_path) {
  if (!container.contains("env") || !container["env"].is_array()) container["env"] = Json::array();
  container["env"].push_back(
      {{"name", std::string(name)},
       {"valueFrom", {{"fieldRef", {{"fieldPath", std::string(field_path)}}}}}});
}

bool HasEnv(const Json& container, std::string_view name) {
  if (!container.contains("env") || !container["env"].is_array()) return false;
  for (const Json& e : container["env"]) {
    if (e.value("name", "") == name) return true;
  }
  return false;
}

}  // namespace coach::reconcile
