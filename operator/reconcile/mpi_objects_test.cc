#include "operator/reconcile/mpi_objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "operator/model/kubernetes_address_plan.h"
#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"

// Expected values: kubeflow-v1.md, "MPIJob v1" (upstream v1.9.4's mpijob controller:
// newConfigMap, updateDiscoverHostsInConfigMap, newLauncherRole/RoleBinding, newLauncher,
// newWorker, isGPULauncher).

namespace coach::reconcile {
namespace {

using model::Json;
using model::KubeObject;
using ::testing::ElementsAre;
using namespace coach::reconcile::testing;  // NOLINT

constexpr char kGpuLauncher[] =
    R"({"spec":{"containers":[{"name":"mpi","image":"i","resources":{"limits":{"nvidia.com/gpu":1}}}]}})";
constexpr char kCpuLauncher[] =
    R"({"spec":{"containers":[{"name":"mpi","image":"i","resources":{"limits":{"cpu":"1"}}}]}})";
constexpr char kAmdLauncher[] =
    R"({"spec":{"containers":[{"name":"mpi","image":"i","resources":{"limits":{"amd.com/gpu":1}}}]}})";

model::Job Mpi(int workers, std::optional<int> slots, const char* launcher_template = nullptr) {
  JobBuilder b = MakeMPIJob("ns", "m").Launcher(1).Workers(workers);
  if (slots) b.SlotsPerWorker(*slots);
  if (launcher_template != nullptr) b.Template("Launcher", launcher_template);
  return b.Build();
}

TEST(MpiObjectsTest, Hostfile) {
  struct Case {
    const char* scenario;
    model::Job job;
    const char* hostfile;
  };
  // clang-format off
  const Case cases[] = {
      {"one slot by default", Mpi(2, {}), "m-worker-0 slots=1\nm-worker-1 slots=1\n"},
      {"slotsPerWorker", Mpi(3, 4), "m-worker-0 slots=4\nm-worker-1 slots=4\nm-worker-2 slots=4\n"},
      {"no workers", Mpi(0, {}), ""},
      {"CPU launcher is not a host", Mpi(1, 2, kCpuLauncher), "m-worker-0 slots=2\n"},
      {"GPU launcher first", Mpi(2, 2, kGpuLauncher), "m-launcher slots=2\nm-worker-0 slots=2\nm-worker-1 slots=2\n"},
      {"any *gpu resource is a GPU", Mpi(1, {}, kAmdLauncher), "m-launcher slots=1\nm-worker-0 slots=1\n"},
  };
  // clang-format on
  KubernetesAddressPlan plan("");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    EXPECT_EQ(MpiHostfile(c.job, plan), c.hostfile);
  }
}

TEST(MpiObjectsTest, DiscoverHosts) {
  struct Case {
    const char* scenario;
    model::Job job;
    std::vector<int> running;
    const char* script;
  };
  // clang-format off
  const Case cases[] = {
      {"nothing running", Mpi(2, {}), {}, "#!/bin/sh"},
      {"running workers", Mpi(2, {}), {1, 0}, "#!/bin/sh\necho m-worker-0:1\necho m-worker-1:1"},
      {"sorted by pod name", Mpi(11, 2), {2, 10, 0}, "#!/bin/sh\necho m-worker-0:2\necho m-worker-10:2\necho m-worker-2:2"},
      {"GPU launcher first", Mpi(1, {}, kGpuLauncher), {0}, "#!/bin/sh\necho m-launcher:1\n\necho m-worker-0:1"},
  };
  // clang-format on
  KubernetesAddressPlan plan("");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    EXPECT_EQ(MpiDiscoverHosts(c.job, plan, c.running), c.script);
  }
}

const KubeObject* Find(const std::vector<KubeObject>& objs, const std::string& kind) {
  for (const KubeObject& o : objs) {
    if (o.kind == kind) return &o;
  }
  return nullptr;
}

TEST(MpiObjectsTest, AuxObjects) {
  struct Case {
    const char* scenario;
    const char* main_container;  // spec.mainContainer, "" for none
    int workers;
    const char* kubexec;
    const char* exec_resource_names;  // Role rule 2, JSON
  };
  // clang-format off
  const Case cases[] = {
      {"default container", "", 2, "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c " "\"$*\"", R"(["m-worker-0","m-worker-1"])"},
      {"mainContainer", "trainer", 1, "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} --container " "trainer -- /bin/sh -c \"$*\"", R"(["m-worker-0"])"},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    model::Job job = Mpi(c.workers, {});
    if (*c.main_container != '\0') job.mutable_spec()->set_main_container(c.main_container);
    auto objs = MpiAuxObjects(job, {}, {});
    ASSERT_TRUE(objs.ok()) << objs.status();
    std::vector<std::string> names;
    for (const KubeObject& o : *objs) names.push_back(o.api_version + " " + o.kind + "/" + o.name);
    EXPECT_THAT(names, ElementsAre("v1 ConfigMap/m-config", "v1 ServiceAccount/m-launcher",
                                   "rbac.authorization.k8s.io/v1 Role/m-launcher",
                                   "rbac.authorization.k8s.io/v1 RoleBinding/m-launcher"));
    const KubeObject& cm = *Find(*objs, "ConfigMap");
    EXPECT_EQ(cm.body["data"]["kubexec.sh"], c.kubexec);
    EXPECT_EQ(cm.body["data"]["hostfile"], MpiHostfile(job, KubernetesAddressPlan("")));
    EXPECT_EQ(cm.body["data"]["discover_hosts.sh"], "#!/bin/sh");
    const KubeObject& role = *Find(*objs, "Role");
    EXPECT_EQ(
        role.body["rules"],
        Json::parse(
            std::string(R"([{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["pods"]},
                                         {"verbs":["create"],"apiGroups":[""],"resources":["pods/exec"],
                                          "resourceNames":)") +
            c.exec_resource_names + "}]"));
    const KubeObject& binding = *Find(*objs, "RoleBinding");
    EXPECT_EQ(binding.body["subjects"],
              Json::parse(R"([{"kind":"ServiceAccount","name":"m-launcher","namespace":"ns"}])"));
    EXPECT_EQ(binding.body["roleRef"],
              Json::parse(
                  R"({"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"m-launcher"})"));
    for (const KubeObject& o : *objs) {
      EXPECT_EQ(o.body["metadata"]["ownerReferences"][0]["kind"], "MPIJob") << o.kind;
    }
  }
}

std::vector<std::string> EnvOf(const Json& container) {
  std::vector<std::string> out;
  for (const Json& e : container.value("env", Json::array())) {
    out.push_back(e["name"].get<std::string>() + "=" + e.value("value", ""));
  }
  return out;
}

TEST(MpiObjectsTest, PodDecorations) {
  struct Case {
    const char* scenario;
    const char* type;
    const char* template_json;
    std::vector<std::string> env;
    const char* command;  // JSON, of container 0 afterwards
    const char* service_account;
  };
  // clang-format off
  const Case cases[] = {
      {"CPU launcher", "Launcher", kCpuLauncher, {"OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh", "OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile", "NVIDIA_VISIBLE_DEVICES=", "NVIDIA_DRIVER_CAPABILITIES=", "I_MPI_HYDRA_BOOTSTRAP=rsh", "I_MPI_HYDRA_BOOTSTRAP_EXEC=/etc/mpi/kubexec.sh"}, "null", "m-launcher"},
      {"GPU launcher keeps the GPUs visible", "Launcher", kGpuLauncher, {"OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh", "OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile", "I_MPI_HYDRA_BOOTSTRAP=rsh", "I_MPI_HYDRA_BOOTSTRAP_EXEC=/etc/mpi/kubexec.sh"}, "null", "m-launcher"},
      {"user's Intel MPI bootstrap is kept", "Launcher", R"({"spec":{"serviceAccountName":"sa","containers":[{"name":"mpi","image":"i","resources":{"limits":{"nvidia.com/gpu":1}},"env":[{"name":"I_MPI_HYDRA_BOOTSTRAP","value":"ssh"}]}]}})", {"I_MPI_HYDRA_BOOTSTRAP=ssh", "OMPI_MCA_plm_rsh_agent=/etc/mpi/kubexec.sh", "OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile", "I_MPI_HYDRA_BOOTSTRAP_EXEC=/etc/mpi/kubexec.sh"}, "null", "sa"},
      {"worker without a command sleeps", "Worker", R"({"spec":{"containers":[{"name":"mpi","image":"i"}]}})", {}, R"(["sleep"])", ""},
      {"worker keeps its command", "Worker", R"({"spec":{"containers":[{"name":"mpi","image":"i","command":["sshd","-D"]}]}})", {}, R"(["sshd","-D"])", ""},
  };
  // clang-format on
  KubernetesAddressPlan plan("");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    // The launcher's own template is what says whether it has a GPU.
    const bool launcher = std::string(c.type) == "Launcher";
    model::Job job = launcher ? Mpi(1, {}, c.template_json) : Mpi(1, {});
    Json tmpl = Json::parse(c.template_json);
    ASSERT_TRUE(DecorateMpiPod(ReplicaRef{job, c.type, 0, plan}, {}, tmpl).ok());
    const Json& container = tmpl["spec"]["containers"][0];
    EXPECT_EQ(EnvOf(container), c.env);
    EXPECT_EQ(container.value("command", Json()), Json::parse(c.command));
    if (std::string(c.command) == R"(["sleep"])") {
      EXPECT_EQ(container["args"], Json::parse(R"(["365d"])"));
    }
    EXPECT_EQ(tmpl["spec"].value("serviceAccountName", ""), c.service_account);
    // Every pod mounts the ConfigMap at /etc/mpi; the launcher also gets kubectl.
    bool config_mounted = false;
    for (const Json& m : container["volumeMounts"]) {
      if (m["name"] == "mpi-job-config" && m["mountPath"] == "/etc/mpi") config_mounted = true;
    }
    EXPECT_TRUE(config_mounted);
    if (launcher) {
      ASSERT_TRUE(tmpl["spec"].contains("initContainers"));
      EXPECT_EQ(tmpl["spec"]["initContainers"][0]["name"], "kubectl-delivery");
    }
  }
}

}  // namespace
}  // namespace coach::reconcile
