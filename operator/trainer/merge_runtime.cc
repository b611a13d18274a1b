#include "operator/trainer/merge_runtime.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "operator/trainer/plan.h"
#include "operator/trainer/strategic_merge.h"
#include "operator/trainer/train_job_fields.h"
#include "operator/trainer/upsert.h"

// Upstream: pkg/runtime/core/trainingruntime.go (newRuntimeInfo, mergeRuntimePatches) and
// pkg/runtime/framework/plugins/jobset/{jobset,builder}.go at v2.3.0.

namespace coach::trainer {
namespace {

using internal::Plan;
using nlohmann::json;

// Quantities in canonical string form, as the API server's round trip through Go types leaves
// them: a JSON number 2.0 becomes "2", "1.5" becomes "1500m".
absl::Status NormalizeResources(json& resources, const std::string& path) {
  if (!resources.is_object()) return absl::OkStatus();
  for (const char* list : {"limits", "requests"}) {
    if (!resources.contains(list)) continue;
    json& l = resources[list];
    if (!l.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".", list, ": must be an object"));
    }
    for (auto& [name, value] : l.items()) {
      std::optional<Quantity> q;
      if (value.is_string()) q = Quantity::Parse(value.get<std::string>());
      if (value.is_number()) q = Quantity::Parse(value.dump());
      if (!q.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".", list, ".", name, ": not a quantity: ", value.dump()));
      }
      value = q->ToString();
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeAllResources(json& spec) {
  json& jobs = spec["replicatedJobs"];
  for (size_t j = 0; j < jobs.size(); ++j) {
    json& pod = jobs[j]["template"]["spec"]["template"]["spec"];
    for (const char* kind : {"initContainers", "containers"}) {
      if (!pod.contains(kind) || !pod[kind].is_array()) continue;
      for (size_t c = 0; c < pod[kind].size(); ++c) {
        if (!pod[kind][c].contains("resources")) continue;
        RETURN_IF_ERROR(NormalizeResources(
            pod[kind][c]["resources"],
            absl::StrCat("spec.template.spec.replicatedJobs[", j, "].template.spec.template.spec.",
                         kind, "[", c, "].resources")));
      }
    }
  }
  return absl::OkStatus();
}

void MergeStringMap(json& into, const json& from) {
  if (!from.is_object()) return;
  for (const auto& [k, v] : from.items()) into[k] = v;
}

// `obj` with only the members named in `keep` and strategic-merge directives ("$patch", ...,
// refused later with their path); not an object: as it is.
json Keep(const json& obj, std::initializer_list<const char*> keep) {
  if (!obj.is_object()) return obj;
  json out = json::object();
  for (const auto& [k, v] : obj.items()) {
    if (!k.empty() && k[0] == '$') {
      out[k] = v;
      continue;
    }
    for (const char* name : keep) {
      if (k == name) out[k] = v;
    }
  }
  return out;
}

// The part of a patch's JobSet spec that upstream's patch types hold (JobSetSpecPatch down to
// PodSpecPatch and ContainerPatch, trainjob_types.go at v2.3.0). Upstream's CRD prunes every
// other field at the API server; coach's keeps the pod template's untyped fields (see
// tools/gen_trainer_crds.py), so a `schedulerName` or a container's `image` in a patch is
// stored here and dropped now, as upstream never sees it.
json AsUpstreamPatch(const json& spec) {
  json out = Keep(spec, {"replicatedJobs"});
  if (!out.contains("replicatedJobs") || !out["replicatedJobs"].is_array()) return out;
  for (json& rjob : out["replicatedJobs"]) {
    rjob = Keep(rjob, {"name", "template"});
    if (!rjob.is_object() || !rjob.contains("template")) continue;
    json& job = rjob["template"] = Keep(rjob["template"], {"metadata", "spec"});
    if (!job.is_object() || !job.contains("spec")) continue;
    json& job_spec = job["spec"] = Keep(job["spec"], {"template"});
    if (!job_spec.is_object() || !job_spec.contains("template")) continue;
    json& pod = job_spec["template"] = Keep(job_spec["template"], {"metadata", "spec"});
    if (!pod.is_object() || !pod.contains("spec")) continue;
    json& pod_spec = pod["spec"] =
        Keep(pod["spec"], {"serviceAccountName", "volumes", "initContainers", "containers",
                           "imagePullSecrets", "securityContext", "nodeSelector", "affinity",
                           "tolerations", "schedulingGates", "terminationGracePeriodSeconds"});
    for (const char* kind : {"containers", "initContainers"}) {
      if (!pod_spec.is_object() || !pod_spec.contains(kind) || !pod_spec[kind].is_array()) continue;
      for (json& c : pod_spec[kind])
        c = Keep(c, {"name", "env", "volumeMounts", "securityContext"});
    }
  }
  return out;
}

// Runtime patches in order, then the runtime's job order back (a merge may reorder).
absl::Status ApplyPatches(const json& train_job, json& spec, json& labels, json& annotations) {
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < spec["replicatedJobs"].size(); ++i) {
    order[spec["replicatedJobs"][i]["name"].get<std::string>()] = i;
  }
  const json& patches = train_job["spec"].value("runtimePatches", json::array());
  for (size_t i = 0; i < patches.size(); ++i) {
    const json& runtime_spec = patches[i].value("trainingRuntimeSpec", json::object());
    const json& tmpl = runtime_spec.value("template", json::object());
    if (tmpl.contains("metadata")) {
      MergeStringMap(labels, tmpl["metadata"].value("labels", json::object()));
      MergeStringMap(annotations, tmpl["metadata"].value("annotations", json::object()));
    }
    if (!tmpl.contains("spec") || tmpl["spec"].is_null()) continue;
    RETURN_IF_ERROR(StrategicMerge(
        spec, AsUpstreamPatch(tmpl["spec"]),
        absl::StrCat("spec.runtimePatches[", i, "].trainingRuntimeSpec.template.spec")));
  }
  json& jobs = spec["replicatedJobs"];
  std::stable_sort(jobs.begin(), jobs.end(), [&](const json& a, const json& b) {
    return order[a["name"].get<std::string>()] < order[b["name"].get<std::string>()];
  });
  return absl::OkStatus();
}

// Pod counts from the runtime, the trainer job, and resourcesPerNode merged into the `node`
// container of the trainer (and of the `node` job of an MPI runtime that runs its launcher
// as a node).
absl::Status PlanJobs(const json& resources_per_node, Plan& plan) {
  const json& ml = plan.ml_policy;
  const bool launcher_as_node =
      ml.is_object() && ml.contains("mpi") && ml["mpi"].value("runLauncherAsNode", false);
  json& jobs = plan.spec["replicatedJobs"];
  for (size_t j = 0; j < jobs.size(); ++j) {
    const json& job_labels =
        jobs[j]["template"].value("metadata", json::object()).value("labels", json::object());
    std::string ancestor = job_labels.value(kAncestorLabel, "");
    int64_t count = jobs[j]["template"]["spec"].value("parallelism", int64_t{1});
    if (ancestor == kAncestorTrainer && ml.is_object()) count = ml.value("numNodes", int64_t{1});
    plan.ancestors.push_back(ancestor);
    plan.counts.push_back(std::max<int64_t>(count, 1));
    if (ancestor == kAncestorTrainer && plan.trainer_index < 0) plan.trainer_index = j;

    const bool sized = (ancestor == kAncestorTrainer && ml.is_object()) ||
                       (launcher_as_node && plan.JobName(j) == kNode);
    if (!sized || resources_per_node.is_null()) continue;
    if (json* node = FindNamed(plan.PodSpec(j)["containers"], kNode); node != nullptr) {
      json& resources = (*node)["resources"];
      if (!resources.is_object()) resources = json::object();
      RETURN_IF_ERROR(
          StrategicMerge(resources, resources_per_node, "spec.trainer.resourcesPerNode"));
    }
  }
  if (plan.trainer_index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.template.spec.replicatedJobs: no job of runtime \"", plan.runtime_name,
                     "\" has template.metadata.labels[", kAncestorLabel, "] = ", kAncestorTrainer));
  }
  return absl::OkStatus();
}

// STORAGE_URI, env and secretRef of spec.initializer.<field> on the initializer's container.
void ApplyInitializer(const json& train_job, const char* ancestor, const char* field, Plan& plan) {
  const json& init = train_job["spec"].value("initializer", json::object());
  for (size_t j = 0; j < plan.counts.size(); ++j) {
    if (plan.ancestors[j] != ancestor) continue;
    plan.spec["replicatedJobs"][j]["replicas"] = 1;
    if (!init.contains(field) || init[field].is_null()) continue;
    const json& cfg = init[field];
    json* c = FindNamed(plan.PodSpec(j)["containers"], ancestor);
    if (c == nullptr) continue;
    if (cfg.contains("storageUri"))
      UpsertEnv((*c)["env"], EnvValue("STORAGE_URI", cfg["storageUri"].get<std::string>()));
    for (const json& e : cfg.value("env", json::array())) UpsertEnv((*c)["env"], e);
    if (cfg.contains("secretRef") && cfg["secretRef"].is_object()) {
      json& env_from = (*c)["envFrom"];
      if (!env_from.is_array()) env_from = json::array();
      env_from.push_back({{"secretRef", {{"name", cfg["secretRef"]["name"]}}}});
    }
  }
}

// The TrainJob's image, command, args and env on the trainer's `node` container.
void ApplyTrainer(Plan& plan) {
  const json& ml = plan.ml_policy;
  const bool launcher_as_node =
      ml.is_object() && ml.contains("mpi") && ml["mpi"].value("runLauncherAsNode", false);
  for (size_t j = 0; j < plan.counts.size(); ++j) {
    const bool is_trainer = plan.ancestors[j] == kAncestorTrainer;
    if (is_trainer) plan.spec["replicatedJobs"][j]["replicas"] = 1;
    if (!is_trainer && !(launcher_as_node && plan.JobName(j) == kNode)) continue;
    json* node = FindNamed(plan.PodSpec(j)["containers"], kNode);
    if (node == nullptr || plan.trainer == nullptr) continue;
    const json& t = *plan.trainer;
    if (is_trainer) {
      if (t.contains("image")) (*node)["image"] = t["image"];
      if (!plan.trainer_command.is_null()) {
        (*node)["command"] = plan.trainer_command;
      } else if (t.contains("command")) {
        (*node)["command"] = t["command"];
      }
      if (t.contains("args")) (*node)["args"] = t["args"];
    }
    for (const json& e : t.value("env", json::array())) UpsertEnv((*node)["env"], e);
  }
}

// Gang scheduling marks on every pod template (plugins coscheduling and volcano).
void ApplyPodGroupPolicy(const json& policy, Plan& plan) {
  if (!policy.is_object()) return;
  for (json& job : plan.spec["replicatedJobs"]) {
    json& meta = job["template"]["spec"]["template"]["metadata"];
    if (policy.contains("coscheduling"))
      meta["labels"]["scheduling.x-k8s.io/pod-group"] = plan.name;
    if (policy.contains("volcano")) meta["annotations"]["scheduling.k8s.io/group-name"] = plan.name;
  }
}

}  // namespace

namespace {
absl::StatusOr<MergedTrainJob> MergeChecked(const json& train_job, const json& runtime);
}  // namespace

absl::StatusOr<MergedTrainJob> MergeRuntime(const json& train_job, const json& runtime) {
  // The shapes are checked before and after the patches, but a patch may put a value of the
  // wrong type anywhere it reaches: a job author must never make the operator throw.
  try {
    return MergeChecked(train_job, runtime);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.runtimePatches: the merged runtime has a field of the wrong type (", e.what(), ")"));
  }
}

namespace {
absl::StatusOr<MergedTrainJob> MergeChecked(const json& train_job, const json& runtime) {
  RETURN_IF_ERROR(ValidateTrainJob(train_job));
  RETURN_IF_ERROR(ValidateRuntime(train_job, runtime));

  Plan plan;
  plan.name = train_job["metadata"]["name"].get<std::string>();
  plan.namespace_ = train_job["metadata"]["namespace"].get<std::string>();
  plan.runtime_name = runtime["metadata"]["name"].get<std::string>();
  const json& spec = train_job["spec"];
  if (spec.contains("trainer") && !spec["trainer"].is_null()) plan.trainer = &spec["trainer"];
  const json& runtime_spec = runtime["spec"];
  plan.ml_policy = runtime_spec.value("mlPolicy", json());

  const json& tmpl = runtime_spec["template"];
  json labels = json::object();
  json annotations = json::object();
  if (tmpl.contains("metadata")) {
    MergeStringMap(labels, tmpl["metadata"].value("labels", json::object()));
    MergeStringMap(annotations, tmpl["metadata"].value("annotations", json::object()));
  }
  plan.spec = tmpl["spec"];
  RETURN_IF_ERROR(ApplyPatches(train_job, plan.spec, labels, annotations));
  RETURN_IF_ERROR(ValidateReplicatedJobs(plan.spec, "spec.template.spec"));

  json resources_per_node;
  if (plan.trainer != nullptr && plan.trainer->contains("resourcesPerNode")) {
    resources_per_node = (*plan.trainer)["resourcesPerNode"];
    RETURN_IF_ERROR(NormalizeResources(resources_per_node, "spec.trainer.resourcesPerNode"));
  }
  RETURN_IF_ERROR(PlanJobs(resources_per_node, plan));
  RETURN_IF_ERROR(NormalizeAllResources(plan.spec));
  RETURN_IF_ERROR(internal::ApplyMlPolicy(plan));

  ApplyInitializer(train_job, kAncestorDatasetInitializer, "dataset", plan);
  ApplyInitializer(train_job, kAncestorModelInitializer, "model", plan);
  ApplyTrainer(plan);
  ApplyPodGroupPolicy(runtime_spec.value("podGroupPolicy", json()), plan);
  for (size_t j = 0; j < plan.counts.size(); ++j) {
    json& job_spec = plan.spec["replicatedJobs"][j]["template"]["spec"];
    job_spec["parallelism"] = plan.counts[j];
    job_spec["completions"] = plan.counts[j];
  }
  if (spec.contains("suspend")) plan.spec["suspend"] = spec["suspend"];

  MergedTrainJob out;
  out.trainer_job = plan.JobName(plan.trainer_index);
  json metadata = {{"name", plan.name}, {"namespace", plan.namespace_}};
  if (!labels.empty()) metadata["labels"] = labels;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  const json& job_meta = train_job["metadata"];
  if (job_meta.contains("uid") && job_meta["uid"].is_string()) {
    metadata["ownerReferences"] = json::array({{{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
                                                {"kind", "TrainJob"},
                                                {"name", plan.name},
                                                {"uid", job_meta["uid"]},
                                                {"controller", true},
                                                {"blockOwnerDeletion", true}}});
  }
  out.job_set = {{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
                 {"kind", "JobSet"},
                 {"metadata", std::move(metadata)},
                 {"spec", std::move(plan.spec)}};
  out.ml_policy = std::move(plan.ml_policy);
  if (out.ml_policy.is_object()) {
    int64_t nodes = out.ml_policy.value("numNodes", int64_t{1});
    if (plan.trainer != nullptr && plan.trainer->contains("numNodes")) {
      nodes = (*plan.trainer)["numNodes"].get<int64_t>();
    }
    out.ml_policy["numNodes"] = nodes;
  }
  out.pod_group_policy = runtime_spec.value("podGroupPolicy", json());
  return out;
}

}  // namespace

namespace internal {

const std::string& Plan::JobName(int i) const {
  return spec["replicatedJobs"][i]["name"].get_ref<const std::string&>();
}

nlohmann::json& Plan::PodSpec(int i) {
  return spec["replicatedJobs"][i]["template"]["spec"]["template"]["spec"];
}

int Plan::FindJob(const std::string& name) const {
  for (size_t i = 0; i < counts.size(); ++i) {
    if (JobName(i) == name) return i;
  }
  return -1;
}

}  // namespace internal
}  // namespace coach::trainer
