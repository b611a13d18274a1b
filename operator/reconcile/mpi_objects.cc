#include "operator/reconcile/mpi_objects.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/model/kubernetes_address_plan.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {
namespace {

using model::Json;
using model::KubeObject;

int Slots(const model::Job& job) {
  return job.spec().has_slots_per_worker() ? job.spec().slots_per_worker() : 1;
}

Json Meta(const model::Job& job, const std::string& name) {
  return {{"name", name},
          {"namespace", job.metadata().namespace_()},
          {"labels", {{"app", job.metadata().name()}}},
          {"ownerReferences", OwnerReferences(job)}};
}

KubeObject Object(const model::Job& job, const std::string& api_version, const std::string& kind,
                  const std::string& name, Json rest) {
  Json body = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", Meta(job, name)}};
  for (auto& [k, v] : rest.items()) body[k] = v;
  return KubeObject{api_version, kind, name, job.metadata().namespace_(), std::move(body)};
}

std::string LauncherServiceAccount(const model::Job& job) {
  auto tmpl = ParseTemplate(job, "Launcher");
  if (tmpl.ok() && tmpl->contains("spec") && (*tmpl)["spec"].is_object()) {
    std::string sa = (*tmpl)["spec"].value("serviceAccountName", "");
    if (!sa.empty()) return sa;
  }
  return absl::StrCat(job.metadata().name(), "-launcher");
}

}  // namespace

bool IsGpuLauncher(const model::Job& job) {
  auto tmpl = ParseTemplate(job, "Launcher");
  if (!tmpl.ok()) return false;
  Json* containers = MutableContainers(*tmpl);
  if (containers == nullptr) return false;
  for (const Json& c : *containers) {
    if (!c.contains("resources") || !c["resources"].contains("limits")) continue;
    for (auto& [key, value] : c["resources"]["limits"].items()) {
      if (absl::EndsWith(key, ".com/gpu") || absl::StrContains(key, "gpu")) return true;
    }
  }
  return false;
}

std::string MpiHostfile(const model::Job& job, const model::AddressPlan& plan) {
  std::string out;
  const int slots = Slots(job);
  if (IsGpuLauncher(job))
    absl::StrAppend(&out, plan.Host(job, "Launcher", 0), " slots=", slots, "\n");
  for (int i = 0; i < Replicas(job, "Worker"); ++i) {
    absl::StrAppend(&out, plan.Host(job, "Worker", i), " slots=", slots, "\n");
  }
  return out;
}

std::string MpiDiscoverHosts(const model::Job& job, const model::AddressPlan& plan,
                             const std::vector<int>& running_worker_indices) {
  std::string out = "#!/bin/sh";
  const int slots = Slots(job);
  if (IsGpuLauncher(job)) {
    absl::StrAppend(&out, "\necho ", plan.Host(job, "Launcher", 0), ":", slots, "\n");
  }
  // Upstream sorts running pods by name; names differ only in the index suffix.
  std::vector<std::string> names;
  for (int i : running_worker_indices) names.push_back(ReplicaName(job, "Worker", i));
  std::vector<size_t> order(running_worker_indices.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  for (size_t i : order) {
    absl::StrAppend(&out, "\necho ", plan.Host(job, "Worker", running_worker_indices[i]), ":",
                    slots);
  }
  return out;
}

absl::StatusOr<std::vector<KubeObject>> MpiAuxObjects(
    const model::Job& job, const model::ReconcileConfig& config,
    const std::vector<int>& running_worker_indices) {
  auto plan = PlanOf(config);
  const std::string& name = job.metadata().name();
  std::string kubexec = absl::StrCat("#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n",
                                     kMpiKubectlMountPath, "/kubectl exec ${POD_NAME}");
  if (job.spec().has_main_container() && !job.spec().main_container().empty()) {
    absl::StrAppend(&kubexec, " --container ", job.spec().main_container());
  }
  absl::StrAppend(&kubexec, " -- /bin/sh -c \"$*\"");

  std::vector<KubeObject> out;
  out.push_back(
      Object(job, "v1", "ConfigMap", name + "-config",
             {{"data",
               {{"hostfile", MpiHostfile(job, *plan)},
                {"kubexec.sh", kubexec},
                {"discover_hosts.sh", MpiDiscoverHosts(job, *plan, running_worker_indices)}}}}));
  const std::string launcher = name + "-launcher";
  const std::string sa = LauncherServiceAccount(job);
  out.push_back(Object(job, "v1", "ServiceAccount", sa, Json::object()));
  Json worker_pods = Json::array();
  for (int i = 0; i < Replicas(job, "Worker"); ++i)
    worker_pods.push_back(ReplicaName(job, "Worker", i));
  out.push_back(Object(job, "rbac.authorization.k8s.io/v1", "Role", launcher,
                       {{"rules", Json::array({{{"verbs", {"get", "list", "watch"}},
                                                {"apiGroups", {""}},
                                                {"resources", {"pods"}}},
                                               {{"verbs", {"create"}},
                                                {"apiGroups", {""}},
                                                {"resources", {"pods/exec"}},
                                                {"resourceNames", worker_pods}}})}}));
  out.push_back(Object(
      job, "rbac.authorization.k8s.io/v1", "RoleBinding", launcher,
      {{"subjects", Json::array({{{"kind", "ServiceAccount"},
                                  {"name", sa},
                                  {"namespace", job.metadata().namespace_()}}})},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", launcher}}}}));
  return out;
}

absl::Status DecorateMpiPod(const ReplicaRef& r, const model::ReconcileConfig& config,
                            Json& pod_template) {
  const model::Job& job = r.job;
  Json* containers = MutableContainers(pod_template);
  if (containers == nullptr || containers->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.mpiReplicaSpecs[", r.type, "].template.spec.containers: empty"));
  }
  Json& spec = pod_template["spec"];
  Json& c = (*containers)[0];
  const std::string config_map = job.metadata().name() + "-config";
  const std::string kubexec_path = absl::StrCat(kMpiConfigMountPath, "/kubexec.sh");
  if (r.type == "Worker") {
    if (!c.contains("command") || !c["command"].is_array() || c["command"].empty()) {
      c["command"] = Json::array({"sleep"});
      c["args"] = Json::array({"365d"});
    }
    EnsureArray(c, "volumeMounts")
        .push_back({{"name", kMpiConfigVolume}, {"mountPath", kMpiConfigMountPath}});
    EnsureArray(spec, "volumes")
        .push_back(
            {{"name", kMpiConfigVolume},
             {"configMap",
              {{"name", config_map},
               {"items",
                Json::array({{{"key", "kubexec.sh"}, {"path", "kubexec.sh"}, {"mode", 0555}}})}}}});
    return absl::OkStatus();
  }
  // Launcher.
  if (spec.value("serviceAccountName", "").empty()) {
    spec["serviceAccountName"] = job.metadata().name() + "-launcher";
  }
  EnsureArray(spec, "initContainers")
      .push_back(
          {{"name", "kubectl-delivery"},
           {"image", config.mpi_kubectl_delivery_image},
           {"imagePullPolicy", "IfNotPresent"},
           {"env", Json::array({{{"name", "TARGET_DIR"}, {"value", kMpiKubectlMountPath}},
                                {{"name", "NAMESPACE"}, {"value", job.metadata().namespace_()}}})},
           {"volumeMounts",
            Json::array({{{"name", kMpiKubectlVolume}, {"mountPath", kMpiKubectlMountPath}},
                         {{"name", kMpiConfigVolume}, {"mountPath", kMpiConfigMountPath}}})},
           {"resources",
            {{"limits", {{"cpu", "100m"}, {"memory", "512Mi"}, {"ephemeral-storage", "5Gi"}}},
             {"requests", {{"cpu", "100m"}, {"memory", "512Mi"}, {"ephemeral-storage", "5Gi"}}}}}});
  AppendEnv(c, "OMPI_MCA_plm_rsh_agent", kubexec_path);
  AppendEnv(c, "OMPI_MCA_orte_default_hostfile", absl::StrCat(kMpiConfigMountPath, "/hostfile"));
  if (!IsGpuLauncher(job)) {
    // Keeps a CPU launcher off GPUs a runtime might expose anyway.
    AppendEnv(c, "NVIDIA_VISIBLE_DEVICES", "");
    AppendEnv(c, "NVIDIA_DRIVER_CAPABILITIES", "");
  }
  const bool has_bootstrap = HasEnv(c, "I_MPI_HYDRA_BOOTSTRAP");
  const bool has_exec = HasEnv(c, "I_MPI_HYDRA_BOOTSTRAP_EXEC");
  if (!has_bootstrap) AppendEnv(c, "I_MPI_HYDRA_BOOTSTRAP", "rsh");
  if (!has_exec) AppendEnv(c, "I_MPI_HYDRA_BOOTSTRAP_EXEC", kubexec_path);
  EnsureArray(c, "volumeMounts")
      .push_back({{"name", kMpiKubectlVolume}, {"mountPath", kMpiKubectlMountPath}});
  c["volumeMounts"].push_back({{"name", kMpiConfigVolume}, {"mountPath", kMpiConfigMountPath}});
  Json& volumes = EnsureArray(spec, "volumes");
  volumes.push_back({{"name", kMpiKubectlVolume}, {"emptyDir", Json::object()}});
  volumes.push_back(
      {{"name", kMpiConfigVolume},
       {"configMap",
        {{"name", config_map},
         {"items",
          Json::array(
              {{{"key", "kubexec.sh"}, {"path", "kubexec.sh"}, {"mode", 0555}},
               {{"key", "hostfile"}, {"path", "hostfile"}, {"mode", 0444}},
               {{"key", "discover_hosts.sh"}, {"path", "discover_hosts.sh"}, {"mode", 0555}}})}}}});
  return absl::OkStatus();
}

}  // namespace coach::reconcile
