#include "operator/trainer/train_job_fields.h"

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace coach::trainer {
namespace {

using nlohmann::json;

absl::Status Invalid(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
}

// The value at `obj[key]`, or nullptr when absent or null. `obj` must be an object.
const json* Field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

absl::Status CheckObject(const json* v, const std::string& path) {
  if (v != nullptr && !v->is_object()) return Invalid(path, "must be an object");
  return absl::OkStatus();
}

absl::Status RequireObject(const json* v, const std::string& path) {
  if (v == nullptr) return Invalid(path, "required");
  return CheckObject(v, path);
}

absl::Status RequireString(const json* v, const std::string& path) {
  if (v == nullptr || !v->is_string() || v->get<std::string>().empty()) {
    return Invalid(path, "required, a non-empty string");
  }
  return absl::OkStatus();
}

absl::Status CheckString(const json* v, const std::string& path) {
  if (v != nullptr && !v->is_string()) return Invalid(path, "must be a string");
  return absl::OkStatus();
}

absl::Status CheckPositive(const json* v, const std::string& path) {
  if (v != nullptr && (!v->is_number_integer() || v->get<int64_t>() < 1 ||
                       v->get<int64_t>() > (int64_t{1} << 31) - 1)) {
    return Invalid(path, "must be a positive 32-bit integer");
  }
  return absl::OkStatus();
}

absl::Status CheckStringList(const json* v, const std::string& path) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_array()) return Invalid(path, "must be a list of strings");
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) return Invalid(absl::StrCat(path, "[", i, "]"), "must be a string");
  }
  return absl::OkStatus();
}

absl::Status CheckStringMap(const json* v, const std::string& path) {
  RETURN_IF_ERROR(CheckObject(v, path));
  if (v == nullptr) return absl::OkStatus();
  for (const auto& [k, value] : v->items()) {
    if (!value.is_string()) return Invalid(absl::StrCat(path, "[", k, "]"), "must be a string");
  }
  return absl::OkStatus();
}

absl::Status CheckEnv(const json* v, const std::string& path) {
  if (v == nullptr) return absl::OkStatus();
  if (!v->is_array()) return Invalid(path, "must be a list");
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string p = absl::StrCat(path, "[", i, "]");
    RETURN_IF_ERROR(RequireObject(&(*v)[i], p));
    RETURN_IF_ERROR(RequireString(Field((*v)[i], "name"), p + ".name"));
  }
  return absl::OkStatus();
}

bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63 || !absl::ascii_islower(s.front())) return false;
  if (s.back() == '-') return false;
  for (char c : s) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-') return false;
  }
  return true;
}

absl::Status CheckTrainer(const json* t) {
  const std::string p = "spec.trainer";
  RETURN_IF_ERROR(CheckObject(t, p));
  if (t == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(CheckPositive(Field(*t, "numNodes"), p + ".numNodes"));
  RETURN_IF_ERROR(CheckPositive(Field(*t, "numProcPerNode"), p + ".numProcPerNode"));
  RETURN_IF_ERROR(CheckString(Field(*t, "image"), p + ".image"));
  RETURN_IF_ERROR(CheckStringList(Field(*t, "command"), p + ".command"));
  RETURN_IF_ERROR(CheckStringList(Field(*t, "args"), p + ".args"));
  RETURN_IF_ERROR(CheckEnv(Field(*t, "env"), p + ".env"));
  return CheckObject(Field(*t, "resourcesPerNode"), p + ".resourcesPerNode");
}

absl::Status CheckInitializer(const json* init) {
  RETURN_IF_ERROR(CheckObject(init, "spec.initializer"));
  if (init == nullptr) return absl::OkStatus();
  for (const char* kind : {"dataset", "model"}) {
    const std::string p = absl::StrCat("spec.initializer.", kind);
    const json* cfg = Field(*init, kind);
    RETURN_IF_ERROR(CheckObject(cfg, p));
    if (cfg == nullptr) continue;
    RETURN_IF_ERROR(CheckString(Field(*cfg, "storageUri"), p + ".storageUri"));
    RETURN_IF_ERROR(CheckEnv(Field(*cfg, "env"), p + ".env"));
    const json* secret = Field(*cfg, "secretRef");
    RETURN_IF_ERROR(CheckObject(secret, p + ".secretRef"));
    if (secret != nullptr) {
      RETURN_IF_ERROR(RequireString(Field(*secret, "name"), p + ".secretRef.name"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckPatches(const json* patches) {
  if (patches == nullptr) return absl::OkStatus();
  if (!patches->is_array()) return Invalid("spec.runtimePatches", "must be a list");
  for (size_t i = 0; i < patches->size(); ++i) {
    const std::string p = absl::StrCat("spec.runtimePatches[", i, "]");
    RETURN_IF_ERROR(RequireObject(&(*patches)[i], p));
    const json* rs = Field((*patches)[i], "trainingRuntimeSpec");
    RETURN_IF_ERROR(CheckObject(rs, p + ".trainingRuntimeSpec"));
    if (rs == nullptr) continue;
    const json* tmpl = Field(*rs, "template");
    RETURN_IF_ERROR(CheckObject(tmpl, p + ".trainingRuntimeSpec.template"));
    if (tmpl == nullptr) continue;
    const std::string tp = p + ".trainingRuntimeSpec.template";
    const json* meta = Field(*tmpl, "metadata");
    RETURN_IF_ERROR(CheckObject(meta, tp + ".metadata"));
    if (meta != nullptr) {
      RETURN_IF_ERROR(CheckStringMap(Field(*meta, "labels"), tp + ".metadata.labels"));
      RETURN_IF_ERROR(CheckStringMap(Field(*meta, "annotations"), tp + ".metadata.annotations"));
    }
    RETURN_IF_ERROR(CheckObject(Field(*tmpl, "spec"), tp + ".spec"));
  }
  return absl::OkStatus();
}

absl::Status CheckEnvInjection(const json* injection) {
  const std::string p = "spec.mlPolicy.torch.envInjection";
  RETURN_IF_ERROR(CheckObject(injection, p));
  if (injection == nullptr) return absl::OkStatus();
  const json* targets = Field(*injection, "targets");
  if (targets == nullptr) return absl::OkStatus();
  if (!targets->is_array()) return Invalid(p + ".targets", "must be a list");
  for (size_t t = 0; t < targets->size(); ++t) {
    const std::string tp = absl::StrCat(p, ".targets[", t, "]");
    RETURN_IF_ERROR(RequireObject(&(*targets)[t], tp));
    RETURN_IF_ERROR(RequireString(Field((*targets)[t], "jobName"), tp + ".jobName"));
    RETURN_IF_ERROR(
        CheckStringList(Field((*targets)[t], "containerNames"), tp + ".containerNames"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTrainJob(const json& train_job) {
  if (!train_job.is_object()) return Invalid("TrainJob", "must be an object");
  const json* meta = Field(train_job, "metadata");
  RETURN_IF_ERROR(RequireObject(meta, "metadata"));
  const json* name = Field(*meta, "name");
  RETURN_IF_ERROR(RequireString(name, "metadata.name"));
  if (!IsDnsLabel(name->get<std::string>())) {
    return Invalid("metadata.name", "must be an RFC 1035 label of at most 63 characters");
  }
  RETURN_IF_ERROR(RequireString(Field(*meta, "namespace"), "metadata.namespace"));
  RETURN_IF_ERROR(CheckString(Field(*meta, "uid"), "metadata.uid"));
  const json* spec = Field(train_job, "spec");
  RETURN_IF_ERROR(RequireObject(spec, "spec"));
  const json* ref = Field(*spec, "runtimeRef");
  RETURN_IF_ERROR(RequireObject(ref, "spec.runtimeRef"));
  RETURN_IF_ERROR(RequireString(Field(*ref, "name"), "spec.runtimeRef.name"));
  RETURN_IF_ERROR(CheckString(Field(*ref, "apiGroup"), "spec.runtimeRef.apiGroup"));
  RETURN_IF_ERROR(CheckString(Field(*ref, "kind"), "spec.runtimeRef.kind"));
  const std::string group = ref->value("apiGroup", "trainer.kubeflow.org");
  const std::string kind = ref->value("kind", "ClusterTrainingRuntime");
  if (group != "trainer.kubeflow.org" ||
      (kind != "TrainingRuntime" && kind != "ClusterTrainingRuntime")) {
    return Invalid("spec.runtimeRef", absl::StrCat("unsupported runtime: ", kind, ".", group));
  }
  RETURN_IF_ERROR(CheckTrainer(Field(*spec, "trainer")));
  RETURN_IF_ERROR(CheckInitializer(Field(*spec, "initializer")));
  RETURN_IF_ERROR(CheckPatches(Field(*spec, "runtimePatches")));
  const json* suspend = Field(*spec, "suspend");
  if (suspend != nullptr && !suspend->is_boolean()) {
    return Invalid("spec.suspend", "must be a boolean");
  }
  return absl::OkStatus();
}

absl::Status ValidateRuntime(const json& train_job, const json& runtime) {
  const json& ref = train_job["spec"]["runtimeRef"];
  const std::string kind = ref.value("kind", "ClusterTrainingRuntime");
  if (!runtime.is_object()) return Invalid("runtime", "must be an object");
  const json* rkind = Field(runtime, "kind");
  if (rkind == nullptr || !rkind->is_string() || rkind->get<std::string>() != kind) {
    return Invalid("spec.runtimeRef.kind",
                   absl::StrCat("names a ", kind, " but the runtime given is a ",
                                rkind != nullptr ? rkind->dump() : "(no kind)"));
  }
  const json* meta = Field(runtime, "metadata");
  RETURN_IF_ERROR(RequireObject(meta, "runtime metadata"));
  const json* rname = Field(*meta, "name");
  if (rname == nullptr || !rname->is_string() || *rname != ref["name"]) {
    return Invalid("spec.runtimeRef.name",
                   absl::StrCat(ref["name"].dump(), " but the runtime given is ",
                                rname != nullptr ? rname->dump() : "unnamed"));
  }
  if (kind == "TrainingRuntime") {
    const json* ns = Field(*meta, "namespace");
    if (ns != nullptr && *ns != train_job["metadata"]["namespace"]) {
      return Invalid("spec.runtimeRef.name",
                     absl::StrCat("a TrainingRuntime is looked up in the TrainJob's namespace ",
                                  train_job["metadata"]["namespace"].dump(), ", not ", ns->dump()));
    }
  }
  const json* spec = Field(runtime, "spec");
  RETURN_IF_ERROR(RequireObject(spec, "runtime spec"));
  const json* ml = Field(*spec, "mlPolicy");
  RETURN_IF_ERROR(CheckObject(ml, "spec.mlPolicy"));
  if (ml != nullptr) {
    RETURN_IF_ERROR(CheckPositive(Field(*ml, "numNodes"), "spec.mlPolicy.numNodes"));
    int frameworks = 0;
    for (const char* f : {"torch", "mpi", "jax", "xgboost", "flux"}) {
      const json* policy = Field(*ml, f);
      RETURN_IF_ERROR(CheckObject(policy, absl::StrCat("spec.mlPolicy.", f)));
      if (policy != nullptr || ml->contains(f)) ++frameworks;
    }
    if (frameworks > 1) return Invalid("spec.mlPolicy", "Only one of the policy can be configured");
    const json* torch = Field(*ml, "torch");
    if (torch != nullptr) RETURN_IF_ERROR(CheckEnvInjection(Field(*torch, "envInjection")));
    const json* mpi = Field(*ml, "mpi");
    if (mpi != nullptr) {
      RETURN_IF_ERROR(
          CheckPositive(Field(*mpi, "numProcPerNode"), "spec.mlPolicy.mpi.numProcPerNode"));
      RETURN_IF_ERROR(
          CheckString(Field(*mpi, "mpiImplementation"), "spec.mlPolicy.mpi.mpiImplementation"));
      RETURN_IF_ERROR(
          CheckString(Field(*mpi, "sshAuthMountPath"), "spec.mlPolicy.mpi.sshAuthMountPath"));
      const json* as_node = Field(*mpi, "runLauncherAsNode");
      if (as_node != nullptr && !as_node->is_boolean()) {
        return Invalid("spec.mlPolicy.mpi.runLauncherAsNode", "must be a boolean");
      }
    }
  }
  RETURN_IF_ERROR(CheckObject(Field(*spec, "podGroupPolicy"), "spec.podGroupPolicy"));
  const json* tmpl = Field(*spec, "template");
  RETURN_IF_ERROR(RequireObject(tmpl, "spec.template"));
  const json* meta_t = Field(*tmpl, "metadata");
  RETURN_IF_ERROR(CheckObject(meta_t, "spec.template.metadata"));
  if (meta_t != nullptr) {
    RETURN_IF_ERROR(CheckStringMap(Field(*meta_t, "labels"), "spec.template.metadata.labels"));
    RETURN_IF_ERROR(
        CheckStringMap(Field(*meta_t, "annotations"), "spec.template.metadata.annotations"));
  }
  const json* jobset = Field(*tmpl, "spec");
  RETURN_IF_ERROR(RequireObject(jobset, "spec.template.spec"));
  return ValidateReplicatedJobs(*jobset, "spec.template.spec");
}

absl::Status ValidateReplicatedJobs(const json& spec, const std::string& path) {
  const json* jobs = Field(spec, "replicatedJobs");
  const std::string jp = path + ".replicatedJobs";
  if (jobs == nullptr || !jobs->is_array() || jobs->empty()) {
    return Invalid(jp, "required, a non-empty list");
  }
  std::set<std::string> names;
  for (size_t j = 0; j < jobs->size(); ++j) {
    const std::string p = absl::StrCat(jp, "[", j, "]");
    const json& job = (*jobs)[j];
    RETURN_IF_ERROR(RequireObject(&job, p));
    RETURN_IF_ERROR(RequireString(Field(job, "name"), p + ".name"));
    if (!names.insert(job["name"].get<std::string>()).second) {
      return Invalid(p + ".name", absl::StrCat("duplicate ", job["name"].dump()));
    }
    const json* replicas = Field(job, "replicas");
    if (replicas != nullptr && !replicas->is_number_integer()) {
      return Invalid(p + ".replicas", "must be an integer");
    }
    const json* tmpl = Field(job, "template");
    RETURN_IF_ERROR(RequireObject(tmpl, p + ".template"));
    const json* meta = Field(*tmpl, "metadata");
    RETURN_IF_ERROR(CheckObject(meta, p + ".template.metadata"));
    if (meta != nullptr) {
      RETURN_IF_ERROR(CheckStringMap(Field(*meta, "labels"), p + ".template.metadata.labels"));
    }
    const json* job_spec = Field(*tmpl, "spec");
    RETURN_IF_ERROR(RequireObject(job_spec, p + ".template.spec"));
    const json* parallelism = Field(*job_spec, "parallelism");
    if (parallelism != nullptr && !parallelism->is_number_integer()) {
      return Invalid(p + ".template.spec.parallelism", "must be an integer");
    }
    const json* pod_tmpl = Field(*job_spec, "template");
    RETURN_IF_ERROR(RequireObject(pod_tmpl, p + ".template.spec.template"));
    RETURN_IF_ERROR(
        CheckObject(Field(*pod_tmpl, "metadata"), p + ".template.spec.template.metadata"));
    const json* pod = Field(*pod_tmpl, "spec");
    const std::string pp = p + ".template.spec.template.spec";
    RETURN_IF_ERROR(RequireObject(pod, pp));
    for (const char* kind : {"containers", "initContainers"}) {
      const json* cs = Field(*pod, kind);
      if (cs == nullptr) {
        if (std::string(kind) == "containers") return Invalid(pp + ".containers", "required");
        continue;
      }
      if (!cs->is_array()) return Invalid(absl::StrCat(pp, ".", kind), "must be a list");
      for (size_t c = 0; c < cs->size(); ++c) {
        const std::string cp = absl::StrCat(pp, ".", kind, "[", c, "]");
        RETURN_IF_ERROR(RequireObject(&(*cs)[c], cp));
        RETURN_IF_ERROR(RequireString(Field((*cs)[c], "name"), cp + ".name"));
        RETURN_IF_ERROR(CheckEnv(Field((*cs)[c], "env"), cp + ".env"));
        RETURN_IF_ERROR(CheckStringList(Field((*cs)[c], "command"), cp + ".command"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace coach::trainer
