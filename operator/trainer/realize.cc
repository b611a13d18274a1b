#include "operator/trainer/realize.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/trainer/names.h"
#include "operator/trainer/upsert.h"

// Upstream: jobset pkg/controllers/jobset_controller.go (constructJob, labelAndAnnotateObject,
// headless service), pkg/controllers/volume_claim_policy.go, the JobSet webhook's defaults
// (v0.12.0), and Kubernetes' Job controller for Indexed Jobs (pod labels, hostname,
// JOB_COMPLETION_INDEX).

namespace coach::trainer {
namespace {

using nlohmann::json;

constexpr char kCompletionIndex[] = "batch.kubernetes.io/job-completion-index";
constexpr char kExclusive[] = "alpha.jobset.sigs.k8s.io/exclusive-topology";
constexpr char kNodeSelector[] = "alpha.jobset.sigs.k8s.io/node-selector";

struct JobSetView {
  std::string name;
  std::string namespace_;
  std::string subdomain;
  bool dns_hostnames = true;
  bool publish_not_ready = true;
  int global_replicas = 0;
  json annotations;  // the JobSet's
};

std::string GroupName(const json& rjob) { return rjob.value("groupName", "default"); }

// Labels that JobSet puts on both the Job and its pod template (also as annotations).
json JobSetMarks(const JobSetView& js, const json& jobs, size_t j, const ClusterFacts& facts) {
  const json& rjob = jobs[j];
  const std::string name = rjob["name"].get<std::string>();
  int global_index = 0;
  int group_replicas = 0;
  int group_index = -1;
  for (size_t k = 0; k < jobs.size(); ++k) {
    const int replicas = jobs[k].value("replicas", 1);
    if (k < j) global_index += replicas;
    if (GroupName(jobs[k]) != GroupName(rjob)) continue;
    if (k == j) group_index = group_replicas;
    group_replicas += replicas;
  }
  const std::string job_name = JobName(js.name, name);
  return {{"jobset.sigs.k8s.io/jobset-name", js.name},
          {"jobset.sigs.k8s.io/jobset-uid", facts.job_set_uid},
          {"jobset.sigs.k8s.io/replicatedjob-name", name},
          {"jobset.sigs.k8s.io/restart-attempt", absl::StrCat(facts.restarts)},
          {"jobset.sigs.k8s.io/replicatedjob-replicas", "1"},
          {"jobset.sigs.k8s.io/global-replicas", absl::StrCat(js.global_replicas)},
          {"jobset.sigs.k8s.io/job-index", "0"},
          {"jobset.sigs.k8s.io/job-key", JobKey(js.namespace_, job_name)},
          {"jobset.sigs.k8s.io/job-global-index", absl::StrCat(global_index)},
          {"jobset.sigs.k8s.io/group-name", GroupName(rjob)},
          {"jobset.sigs.k8s.io/group-replicas", absl::StrCat(group_replicas)},
          {"jobset.sigs.k8s.io/job-group-index", absl::StrCat(group_index)}};
}

bool MountsVolume(const json& pod_spec, const std::string& volume) {
  for (const char* kind : {"containers", "initContainers"}) {
    if (!pod_spec.contains(kind)) continue;
    for (const json& c : pod_spec[kind]) {
      for (const json& m : c.value("volumeMounts", json::array())) {
        if (m.value("name", "") == volume) return true;
      }
    }
  }
  return false;
}

// PVCs of spec.volumeClaimPolicies, as volumes of the pods that mount them.
absl::Status AddClaimVolumes(const json& spec, const JobSetView& js, json& pod_spec) {
  const json policies = spec.value("volumeClaimPolicies", json::array());
  if (!policies.is_array()) {
    return absl::InvalidArgumentError("spec.template.spec.volumeClaimPolicies: must be a list");
  }
  for (size_t p = 0; p < policies.size(); ++p) {
    const json templates =
        policies[p].is_object() ? policies[p].value("templates", json::array()) : json();
    if (!templates.is_array()) {
      return absl::InvalidArgumentError(absl::StrCat("spec.template.spec.volumeClaimPolicies[", p,
                                                     "].templates: must be a list"));
    }
    for (size_t t = 0; t < templates.size(); ++t) {
      const json meta = templates[t].is_object() ? templates[t].value("metadata", json()) : json();
      if (!meta.is_object() || !meta.contains("name") || !meta["name"].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat("spec.template.spec.volumeClaimPolicies[", p,
                                                       "].templates[", t,
                                                       "].metadata.name: required"));
      }
      const std::string name = meta["name"].get<std::string>();
      if (!MountsVolume(pod_spec, name)) continue;
      json& volumes = pod_spec["volumes"];
      if (!volumes.is_array()) volumes = json::array();
      volumes.push_back(
          {{"name", name}, {"persistentVolumeClaim", {{"claimName", name + "-" + js.name}}}});
    }
  }
  return absl::OkStatus();
}

// The Job controller reads the index from the pod's label since PodIndexLabel went GA
// (Kubernetes 1.32); its annotation stays too, and the framework env reads that.
void AddCompletionIndexEnv(json& pod_spec) {
  for (const char* kind : {"containers", "initContainers"}) {
    if (!pod_spec.contains(kind)) continue;
    for (json& c : pod_spec[kind]) {
      if (FindNamed(c["env"], "JOB_COMPLETION_INDEX") != nullptr) continue;
      c["env"].push_back(EnvFieldRef("JOB_COMPLETION_INDEX",
                                     absl::StrCat("metadata.labels['", kCompletionIndex, "']")));
    }
  }
}

void MergeInto(json& into, const json& from) {
  if (!into.is_object()) into = json::object();
  if (!from.is_object()) return;
  for (const auto& [k, v] : from.items()) into[k] = v;
}

absl::StatusOr<json> MakePod(const JobSetView& js, const json& spec, size_t j, int index,
                             const std::string& train_job_uid, const ClusterFacts& facts) {
  const json& jobs = spec["replicatedJobs"];
  const json& rjob = jobs[j];
  const std::string rjob_name = rjob["name"].get<std::string>();
  const std::string job_name = JobName(js.name, rjob_name);
  auto uid = facts.job_uids.find(rjob_name);
  const std::string job_uid = uid == facts.job_uids.end() ? "" : uid->second;
  const json& pod_template = rjob["template"]["spec"]["template"];
  const json meta = pod_template.value("metadata", json::object());

  const json marks = JobSetMarks(js, jobs, j, facts);
  json labels = meta.value("labels", json::object());
  json annotations = meta.value("annotations", json::object());
  MergeInto(labels, marks);
  MergeInto(annotations, marks);
  // Exclusive placement: the JobSet's marks, then the replicated job's own.
  const json job_annotations =
      rjob["template"].value("metadata", json::object()).value("annotations", json::object());
  for (const json* source : {&js.annotations, &job_annotations}) {
    if (!source->is_object() || !source->contains(kExclusive)) continue;
    annotations[kExclusive] = (*source)[kExclusive];
    if (source->contains(kNodeSelector)) annotations[kNodeSelector] = (*source)[kNodeSelector];
  }
  labels[kCompletionIndex] = absl::StrCat(index);
  labels["batch.kubernetes.io/job-name"] = job_name;
  labels["job-name"] = job_name;
  labels["batch.kubernetes.io/controller-uid"] = job_uid;
  labels["controller-uid"] = job_uid;
  annotations[kCompletionIndex] = absl::StrCat(index);

  json pod_spec = pod_template["spec"];
  if (pod_spec.value("restartPolicy", "").empty()) pod_spec["restartPolicy"] = "OnFailure";
  if (js.dns_hostnames) pod_spec["subdomain"] = js.subdomain;
  if (pod_spec.value("hostname", "").empty()) {
    pod_spec["hostname"] = absl::StrCat(job_name, "-", index);
  }
  RETURN_IF_ERROR(AddClaimVolumes(spec, js, pod_spec));
  AddCompletionIndexEnv(pod_spec);

  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", PodName(js.namespace_, js.name, train_job_uid, rjob_name, index)},
                // What the Job controller asks for; the name above is given, so the API server
                // keeps it and records this.
                {"generateName", absl::StrCat(job_name, "-", index, "-")},
                {"namespace", js.namespace_},
                {"labels", std::move(labels)},
                {"annotations", std::move(annotations)},
                {"ownerReferences", json::array({{{"apiVersion", "batch/v1"},
                                                  {"kind", "Job"},
                                                  {"name", job_name},
                                                  {"uid", job_uid},
                                                  {"controller", true},
                                                  {"blockOwnerDeletion", true}}})}}},
              {"spec", std::move(pod_spec)}};
}

json OwnedByTrainJob(const json& train_job) {
  const json& meta = train_job["metadata"];
  if (!meta.contains("uid")) return json::array();
  return json::array({{{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
                       {"kind", "TrainJob"},
                       {"name", meta["name"]},
                       {"uid", meta["uid"]},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

// `<host> slots=<n>` per node pod (and the launcher's when it runs as a node), job order.
json Hostfile(const JobSetView& js, const MergedTrainJob& merged, const json& train_job) {
  const json& mpi = merged.ml_policy["mpi"];
  const bool launcher_as_node = mpi.value("runLauncherAsNode", false);
  const int64_t slots = mpi.value("numProcPerNode", int64_t{1});
  std::string text;
  for (const json& rjob : merged.job_set["spec"]["replicatedJobs"]) {
    const std::string name = rjob["name"].get<std::string>();
    if (name != kNode && !(launcher_as_node && name == kLauncher)) continue;
    const int64_t count = rjob["template"]["spec"].value("parallelism", int64_t{1});
    for (int64_t i = 0; i < count; ++i) {
      absl::StrAppend(&text, JobName(js.name, name), "-", i, ".", js.subdomain, " slots=", slots,
                      "\n");
    }
  }
  json meta = {{"name", js.name + "-mpi-hostfile"}, {"namespace", js.namespace_}};
  json owners = OwnedByTrainJob(train_job);
  if (!owners.empty()) meta["ownerReferences"] = owners;
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", std::move(meta)},
          {"data", {{"hostfile", text}}}};
}

}  // namespace

namespace {
absl::StatusOr<RealizedTrainJob> RealizeChecked(const json& train_job, const MergedTrainJob& merged,
                                                const ClusterFacts& facts);
}  // namespace

absl::StatusOr<RealizedTrainJob> RealizeTrainJob(const json& train_job,
                                                 const MergedTrainJob& merged,
                                                 const ClusterFacts& facts) {
  // As MergeRuntime: no field a job author wrote may make the operator throw.
  try {
    return RealizeChecked(train_job, merged, facts);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.template.spec: the merged JobSet has a field of the wrong type (", e.what(), ")"));
  }
}

namespace {
absl::StatusOr<RealizedTrainJob> RealizeChecked(const json& train_job, const MergedTrainJob& merged,
                                                const ClusterFacts& facts) {
  const json& job_set = merged.job_set;
  const json& spec = job_set["spec"];
  JobSetView js;
  js.name = job_set["metadata"]["name"].get<std::string>();
  js.namespace_ = job_set["metadata"]["namespace"].get<std::string>();
  js.subdomain = js.name;
  js.annotations = job_set["metadata"].value("annotations", json::object());
  if (spec.contains("network")) {
    const json& net = spec["network"];
    if (!net.is_object()) {
      return absl::InvalidArgumentError("spec.template.spec.network: must be an object");
    }
    if (net.contains("subdomain") && net["subdomain"].is_string() &&
        !net["subdomain"].get<std::string>().empty()) {
      js.subdomain = net["subdomain"].get<std::string>();
    }
    js.dns_hostnames = net.value("enableDNSHostnames", true);
    js.publish_not_ready = net.value("publishNotReadyAddresses", true);
  }
  const json& jobs = spec["replicatedJobs"];
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].value("replicas", 1) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.template.spec.replicatedJobs[", j,
                       "].replicas: coach runs one Job per replicated job; must be 1"));
    }
  }
  js.global_replicas = jobs.size();
  const std::string uid = train_job["metadata"].value("uid", "");

  RealizedTrainJob out;
  for (size_t j = 0; j < jobs.size(); ++j) {
    RealizedJob job;
    job.name = jobs[j]["name"].get<std::string>();
    job.job_name = JobName(js.name, job.name);
    job.ancestor_step = jobs[j]["template"]
                            .value("metadata", json::object())
                            .value("labels", json::object())
                            .value(kAncestorLabel, "");
    job.pod_count = jobs[j]["template"]["spec"].value("parallelism", 1);
    job.depends_on = jobs[j].value("dependsOn", json::array());
    for (int i = 0; i < job.pod_count; ++i) {
      ASSIGN_OR_RETURN(json pod, MakePod(js, spec, j, i, uid, facts));
      job.pods.push_back(std::move(pod));
    }
    out.jobs.push_back(std::move(job));
  }
  json service_meta = {{"name", js.subdomain}, {"namespace", js.namespace_}};
  if (!facts.job_set_uid.empty()) {
    service_meta["ownerReferences"] = json::array({{{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
                                                    {"kind", "JobSet"},
                                                    {"name", js.name},
                                                    {"uid", facts.job_set_uid},
                                                    {"controller", true},
                                                    {"blockOwnerDeletion", true}}});
  }
  out.service = {{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", std::move(service_meta)},
                 {"spec",
                  {{"clusterIP", "None"},
                   {"selector", {{"jobset.sigs.k8s.io/jobset-name", js.name}}},
                   {"publishNotReadyAddresses", js.publish_not_ready}}}};
  if (merged.ml_policy.is_object() && merged.ml_policy.contains("mpi")) {
    out.mpi_hostfile = Hostfile(js, merged, train_job);
  }
  return out;
}
}  // namespace

}  // namespace coach::trainer
