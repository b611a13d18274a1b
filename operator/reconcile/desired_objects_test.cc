#include "operator/reconcile/desired_objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "operator/model/kubernetes_address_plan.h"
#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/framework_env.h"
#include "operator/reconcile/mpi_objects.h"
#include "operator/reconcile/plan_job.h"

namespace coach::reconcile {
namespace {

using model::Json;
using model::KubeObject;
using ::testing::ElementsAre;
using ::testing::Pair;
using namespace coach::reconcile::testing;  // NOLINT

std::vector<std::pair<std::string, std::string>> Env(const KubeObject& pod, size_t container = 0) {
  std::vector<std::pair<std::string, std::string>> out;
  const Json& c = pod.body["spec"]["containers"][container];
  if (!c.contains("env")) return out;
  for (const Json& e : c["env"]) {
    out.emplace_back(e["name"].get<std::string>(),
                     e.contains("value") ? e["value"].get<std::string>() : "<from>");
  }
  return out;
}

std::string EnvValue(const KubeObject& pod, const std::string& name) {
  for (const auto& [n, v] : Env(pod)) {
    if (n == name) return v;
  }
  return "<unset>";
}

const KubeObject& Find(const std::vector<KubeObject>& objs, const std::string& kind,
                       const std::string& name) {
  for (const KubeObject& o : objs) {
    if (o.kind == kind && o.name == name) return o;
  }
  static const KubeObject* none = new KubeObject{};
  ADD_FAILURE() << "no " << kind << " " << name;
  return *none;
}

std::vector<std::string> Names(const std::vector<KubeObject>& objs) {
  std::vector<std::string> out;
  for (const KubeObject& o : objs) out.push_back(o.kind + "/" + o.name);
  return out;
}

// A plan like the local backend's: everything on 127.0.0.1, ports by a formula.
class FakePlan : public model::AddressPlan {
 public:
  std::string Host(const model::Job&, std::string_view, int) const override { return "127.0.0.1"; }
  std::string QualifiedHost(const model::Job&, std::string_view type, int index) const override {
    return "local-" + Lower(type) + std::to_string(index);
  }
  int Port(const model::Job&, std::string_view type, int index, std::string_view,
           int declared) const override {
    return 40000 + (type == "Worker" ? 100 : 0) + index + declared % 10;
  }
  bool PodIPAvailable() const override { return false; }
};

model::ReconcileConfig LocalConfig() {
  model::ReconcileConfig c;
  c.address_plan = std::make_shared<FakePlan>();
  return c;
}

TEST(DesiredObjectsTest, SeedPyTorchJobOrderAndEnv) {
  auto objs = DesiredObjects(SeedPyTorchJob(), {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_THAT(Names(*objs),
              ElementsAre("Pod/pytorch-mnist-master-0", "Service/pytorch-mnist-master-0",
                          "Pod/pytorch-mnist-worker-0", "Service/pytorch-mnist-worker-0",
                          "Pod/pytorch-mnist-worker-1", "Service/pytorch-mnist-worker-1"));
  const std::vector<std::pair<std::string, int>> pods = {
      {"pytorch-mnist-master-0", 0}, {"pytorch-mnist-worker-0", 1}, {"pytorch-mnist-worker-1", 2}};
  for (const auto& [name, rank] : pods) {
    SCOPED_TRACE(name);
    const std::string r = std::to_string(rank);
    EXPECT_THAT(
        Env(Find(*objs, "Pod", name)),
        ElementsAre(Pair("PYTHONUNBUFFERED", "1"), Pair("MASTER_PORT", "23456"),
                    Pair("MASTER_ADDR", "pytorch-mnist-master-0"), Pair("PET_MASTER_PORT", "23456"),
                    Pair("PET_MASTER_ADDR", "pytorch-mnist-master-0"), Pair("WORLD_SIZE", "3"),
                    Pair("RANK", r), Pair("PET_NPROC_PER_NODE", "auto"), Pair("PET_NODE_RANK", r),
                    Pair("PET_NNODES", "3")));
  }
}

TEST(DesiredObjectsTest, PodMetadataLabelsOwnerAndRestartPolicy) {
  model::Job job = MakePyTorchJob("ns", "pj")
                       .Master(1)
                       .Workers(1)
                       .RestartPolicy("ExitCode")
                       .Template("Worker", R"({"metadata":{"labels":{"team":"a"},
                           "annotations":{"note":"x"}},
                           "spec":{"restartPolicy":"Always","nodeSelector":{"gpu":"yes"},
                           "containers":[{"name":"pytorch","image":"img",
                           "ports":[{"name":"pytorchjob-port","containerPort":23456}]},
                           {"name":"sidecar","image":"s"}]}})")
                       .Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  const KubeObject& worker = Find(*objs, "Pod", "pj-worker-0");
  const Json& meta = worker.body["metadata"];
  EXPECT_EQ(meta["namespace"], "ns");
  EXPECT_EQ(meta["labels"]["team"], "a");
  EXPECT_EQ(meta["labels"]["training.kubeflow.org/operator-name"], "pytorchjob-controller");
  EXPECT_EQ(meta["labels"]["training.kubeflow.org/job-name"], "pj");
  EXPECT_EQ(meta["labels"]["training.kubeflow.org/replica-type"], "worker");
  EXPECT_EQ(meta["labels"]["training.kubeflow.org/replica-index"], "0");
  EXPECT_FALSE(meta["labels"].contains("training.kubeflow.org/job-role"));
  EXPECT_EQ(meta["annotations"]["note"], "x");
  EXPECT_EQ(meta["ownerReferences"],
            Json::parse(R"([{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"pj",
                "uid":"uid-pj","controller":true,"blockOwnerDeletion":true}])"));
  EXPECT_EQ(worker.body["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(worker.body["spec"]["nodeSelector"]["gpu"], "yes");
  // Every container gets the PyTorch env, the sidecar included.
  EXPECT_EQ(EnvValue(worker, "RANK"), "1");
  EXPECT_EQ(worker.body["spec"]["containers"][1]["env"].size(), 10u);
  const KubeObject& master = Find(*objs, "Pod", "pj-master-0");
  EXPECT_EQ(master.body["metadata"]["labels"]["training.kubeflow.org/job-role"], "master");

  const KubeObject& svc = Find(*objs, "Service", "pj-worker-0");
  EXPECT_EQ(svc.body["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc.body["spec"]["ports"], Json::parse(R"([{"name":"pytorchjob-port","port":23456}])"));
  EXPECT_EQ(svc.body["spec"]["selector"]["training.kubeflow.org/replica-index"], "0");
  EXPECT_EQ(svc.body["metadata"]["ownerReferences"][0]["kind"], "PyTorchJob");
}

TEST(DesiredObjectsTest, MissingMasterPortIsNotFound) {
  model::Job job = MakePyTorchJob("ns", "pj")
                       .Master(1)
                       .Template("Master", R"({"spec":{"containers":[{"name":"pytorch"}]}})")
                       .Build();
  EXPECT_EQ(DesiredObjects(job, {}).status().code(), absl::StatusCode::kNotFound);
}

TEST(DesiredObjectsTest, BadTemplateIsInvalidArgument) {
  model::Job job = MakePyTorchJob("ns", "pj").Master(1).Template("Master", "[1,").Build();
  EXPECT_EQ(DesiredObjects(job, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DesiredObjectsTest, ElasticKeepsTheContainersOwnStoreSharing) {
  model::Job job = MakePyTorchJob("ns", "el")
                       .Workers(2)
                       .Elastic(1, 3)
                       .Template("Worker", R"({"spec":{"containers":[{"name":"pytorch","image":"x",
                         "ports":[{"name":"pytorchjob-port","containerPort":23456}],
                         "env":[{"name":"TORCH_DISABLE_SHARE_RDZV_TCP_STORE","value":"0"}]}]}})")
                       .Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  int count = 0;
  for (const auto& [name, value] : Env(Find(*objs, "Pod", "el-worker-1"))) {
    if (name != "TORCH_DISABLE_SHARE_RDZV_TCP_STORE") continue;
    ++count;
    EXPECT_EQ(value, "0");
  }
  EXPECT_EQ(count, 1);
}

TEST(DesiredObjectsTest, PyTorchWithoutMasterAndElastic) {
  model::Job job = MakePyTorchJob("ns", "el").Workers(2).Elastic(1, 3).RdzvId("abc").Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_THAT(
      Env(Find(*objs, "Pod", "el-worker-1")),
      ElementsAre(Pair("PYTHONUNBUFFERED", "1"), Pair("PET_NPROC_PER_NODE", "auto"),
                  Pair("PET_RDZV_ENDPOINT", "el-worker-0:23456"), Pair("PET_RDZV_BACKEND", "c10d"),
                  Pair("PET_NNODES", "1:3"), Pair("PET_RDZV_ID", "abc"),
                  Pair("PET_RDZV_CONF", "keep_alive_interval=1"),
                  Pair("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")));
  EXPECT_EQ(Find(*objs, "Pod", "el-worker-0")
                .body["metadata"]["labels"]["training.kubeflow.org/job-role"],
            "master");
}

// Upstream's elastic examples (echo, imagenet): Workers only, nprocPerNode given or not.
TEST(DesiredObjectsTest, PyTorchWorkerOnlyGetsNprocPerNode) {
  struct Case {
    const char* scenario;
    model::Job job;
    const char* want;
  };
  const Case cases[] = {
      {"no elasticPolicy, default", MakePyTorchJob("ns", "w").Workers(2).Build(), "auto"},
      {"no elasticPolicy, given", MakePyTorchJob("ns", "w").Workers(2).NprocPerNode("2").Build(),
       "2"},
      {"elastic, default", MakePyTorchJob("ns", "w").Workers(2).Elastic(1, 2).Build(), "auto"},
      {"elastic, spec.nprocPerNode",
       MakePyTorchJob("ns", "w").Workers(2).Elastic(1, 2).NprocPerNode("cpu").Build(), "cpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    auto objs = DesiredObjects(c.job, {});
    ASSERT_TRUE(objs.ok()) << objs.status();
    for (const char* pod : {"w-worker-0", "w-worker-1"}) {
      const Json& env = Find(*objs, "Pod", pod).body["spec"]["containers"][0]["env"];
      int count = 0;
      for (const Json& e : env) count += e["name"] == "PET_NPROC_PER_NODE";
      EXPECT_EQ(count, 1) << pod;
      EXPECT_EQ(EnvValue(Find(*objs, "Pod", pod), "PET_NPROC_PER_NODE"), c.want) << pod;
    }
  }
}

TEST(DesiredObjectsTest, PyTorchWorldSizeMultipliesIntegerNproc) {
  auto objs =
      DesiredObjects(MakePyTorchJob("ns", "p").Master(1).Workers(3).NprocPerNode("4").Build(), {});
  ASSERT_TRUE(objs.ok());
  EXPECT_EQ(EnvValue(Find(*objs, "Pod", "p-worker-2"), "WORLD_SIZE"), "16");
  EXPECT_EQ(EnvValue(Find(*objs, "Pod", "p-worker-2"), "PET_NPROC_PER_NODE"), "4");
}

TEST(DesiredObjectsTest, TFConfigExact) {
  model::Job job = MakeTFJob("ns", "tf").PS(1).Workers(2).Chief(1).Evaluator(1).Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_EQ(EnvValue(Find(*objs, "Pod", "tf-worker-1"), "TF_CONFIG"),
            R"({"cluster":{"chief":["tf-chief-0.ns.svc:2222"],"ps":["tf-ps-0.ns.svc:2222"],)"
            R"("worker":["tf-worker-0.ns.svc:2222","tf-worker-1.ns.svc:2222"]},)"
            R"("task":{"type":"worker","index":1},"environment":"cloud"})");
  EXPECT_EQ(
      Find(*objs, "Pod", "tf-chief-0").body["metadata"]["labels"]["training.kubeflow.org/job-role"],
      "master");
  EXPECT_THAT(
      Names(*objs),
      ElementsAre("Pod/tf-ps-0", "Service/tf-ps-0", "Pod/tf-worker-0", "Service/tf-worker-0",
                  "Pod/tf-worker-1", "Service/tf-worker-1", "Pod/tf-chief-0", "Service/tf-chief-0",
                  "Pod/tf-evaluator-0", "Service/tf-evaluator-0"));
}

TEST(DesiredObjectsTest, TFConfigClusterDomainSparseAndSingleReplica) {
  model::ReconcileConfig config;
  config.cluster_domain = "cluster.local";
  model::Job job = MakeTFJob("ns", "tf").PS(1).Workers(2).EnableDynamicWorker(true).Build();
  auto objs = DesiredObjects(job, config);
  ASSERT_TRUE(objs.ok());
  EXPECT_EQ(EnvValue(Find(*objs, "Pod", "tf-worker-1"), "TF_CONFIG"),
            R"({"sparseCluster":{"worker":{"1":"tf-worker-1.ns.svc.cluster.local:2222"},)"
            R"("ps":["tf-ps-0.ns.svc.cluster.local:2222"]},"task":{"type":"worker","index":1}})");
  auto single = DesiredObjects(MakeTFJob("ns", "one").Workers(1).Build(), {});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(EnvValue(Find(*single, "Pod", "one-worker-0"), "TF_CONFIG"), "<unset>");
}

TEST(DesiredObjectsTest, TFConfigOnlyOnTensorflowContainer) {
  model::Job job = MakeTFJob("ns", "tf")
                       .Workers(2)
                       .Template("Worker", R"({"spec":{"containers":[{"name":"side"},
                           {"name":"tensorflow","ports":[{"name":"tfjob-port","containerPort":3333}]}]}})")
                       .Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok());
  const KubeObject& pod = Find(*objs, "Pod", "tf-worker-0");
  EXPECT_FALSE(pod.body["spec"]["containers"][0].contains("env"));
  EXPECT_THAT(pod.body["spec"]["containers"][1]["env"][0]["value"].get<std::string>(),
              ::testing::HasSubstr("tf-worker-1.ns.svc:3333"));
}

TEST(DesiredObjectsTest, XGBoostEnv) {
  auto objs = DesiredObjects(MakeXGBoostJob("ns", "xg").Master(1).Workers(2).Build(), {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_THAT(
      Env(Find(*objs, "Pod", "xg-worker-1")),
      ElementsAre(Pair("MASTER_PORT", "9999"), Pair("MASTER_ADDR", "xg-master-0"),
                  Pair("WORLD_SIZE", "3"), Pair("RANK", "2"), Pair("PYTHONUNBUFFERED", "1"),
                  Pair("WORKER_PORT", "9999"), Pair("WORKER_ADDRS", "xg-worker-0,xg-worker-1")));
}

TEST(DesiredObjectsTest, PaddleCollectiveAndPS) {
  auto coll = DesiredObjects(MakePaddleJob("ns", "pd").Workers(2).Build(), {});
  ASSERT_TRUE(coll.ok()) << coll.status();
  EXPECT_THAT(Env(Find(*coll, "Pod", "pd-worker-0")),
              ElementsAre(Pair("PYTHONUNBUFFERED", "1"), Pair("PADDLE_JOB_ID", "pd"),
                          Pair("PADDLE_NNODES", "2"), Pair("POD_IP_DUMMY", "<from>"),
                          Pair("PADDLE_MASTER", "$(POD_IP_DUMMY):36543")));
  EXPECT_EQ(
      Find(*coll, "Pod", "pd-worker-0").body["spec"]["containers"][0]["env"][3],
      Json::parse(
          R"({"name":"POD_IP_DUMMY","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}})"));
  EXPECT_EQ(EnvValue(Find(*coll, "Pod", "pd-worker-1"), "PADDLE_MASTER"), "pd-worker-0:36543");
  auto ps = DesiredObjects(MakePaddleJob("ns", "pd").Master(1).Workers(1).Build(), {});
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ(EnvValue(Find(*ps, "Pod", "pd-worker-0"), "PADDLE_MASTER"), "pd-master-0:36543");
  EXPECT_EQ(EnvValue(Find(*ps, "Pod", "pd-worker-0"), "PADDLE_TRAINER_NUM"), "1");
  EXPECT_EQ(EnvValue(Find(*ps, "Pod", "pd-master-0"), "PADDLE_SERVER_NUM"), "1");
}

TEST(DesiredObjectsTest, JaxEnv) {
  auto objs = DesiredObjects(MakeJAXJob("ns", "jx").Workers(2).Build(), {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_THAT(Env(Find(*objs, "Pod", "jx-worker-1")),
              ElementsAre(Pair("PYTHONUNBUFFERED", "1"), Pair("COORDINATOR_PORT", "6666"),
                          Pair("COORDINATOR_ADDRESS", "jx-worker-0"), Pair("NUM_PROCESSES", "2"),
                          Pair("PROCESS_ID", "1")));
}

TEST(DesiredObjectsTest, MpiObjects) {
  model::Job job = MakeMPIJob("ns", "mpi").Launcher(1).Workers(2).SlotsPerWorker(4).Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok()) << objs.status();
  EXPECT_THAT(Names(*objs),
              ElementsAre("ConfigMap/mpi-config", "ServiceAccount/mpi-launcher",
                          "Role/mpi-launcher", "RoleBinding/mpi-launcher", "Pod/mpi-launcher",
                          "Pod/mpi-worker-0", "Pod/mpi-worker-1"));
  const Json& data = Find(*objs, "ConfigMap", "mpi-config").body["data"];
  EXPECT_EQ(data["hostfile"], "mpi-worker-0 slots=4\nmpi-worker-1 slots=4\n");
  EXPECT_EQ(data["kubexec.sh"],
            "#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh "
            "-c \"$*\"");
  EXPECT_EQ(data["discover_hosts.sh"], "#!/bin/sh");
  EXPECT_EQ(Find(*objs, "Role", "mpi-launcher").body["rules"][1]["resourceNames"],
            Json::parse(R"(["mpi-worker-0","mpi-worker-1"])"));
  EXPECT_EQ(Find(*objs, "RoleBinding", "mpi-launcher").body["subjects"][0]["name"], "mpi-launcher");
  const KubeObject& launcher = Find(*objs, "Pod", "mpi-launcher");
  EXPECT_THAT(
      Env(launcher),
      ElementsAre(Pair("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
                  Pair("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                  Pair("NVIDIA_VISIBLE_DEVICES", ""), Pair("NVIDIA_DRIVER_CAPABILITIES", ""),
                  Pair("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
                  Pair("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh")));
  EXPECT_EQ(launcher.body["spec"]["serviceAccountName"], "mpi-launcher");
  EXPECT_EQ(launcher.body["spec"]["initContainers"][0]["name"], "kubectl-delivery");
  EXPECT_EQ(launcher.body["spec"]["volumes"][1]["configMap"]["items"][1]["mode"], 0444);
  EXPECT_EQ(launcher.body["metadata"]["labels"]["training.kubeflow.org/job-role"], "master");
  const KubeObject& worker = Find(*objs, "Pod", "mpi-worker-1");
  EXPECT_EQ(worker.body["spec"]["containers"][0]["command"], Json::parse(R"(["sleep"])"));
  EXPECT_EQ(worker.body["spec"]["containers"][0]["args"], Json::parse(R"(["365d"])"));
  EXPECT_EQ(worker.body["spec"]["containers"][0]["volumeMounts"][0]["mountPath"], "/etc/mpi");
}

TEST(DesiredObjectsTest, MpiGpuLauncherIsInHostfile) {
  model::Job job = MakeMPIJob("ns", "g")
                       .Launcher(1)
                       .Workers(1)
                       .Template("Launcher", R"({"spec":{"containers":[{"name":"mpi",
                           "resources":{"limits":{"nvidia.com/gpu":1}}}]}})")
                       .Build();
  auto objs = DesiredObjects(job, {});
  ASSERT_TRUE(objs.ok());
  EXPECT_EQ(Find(*objs, "ConfigMap", "g-config").body["data"]["hostfile"],
            "g-launcher slots=1\ng-worker-0 slots=1\n");
  EXPECT_EQ(EnvValue(Find(*objs, "Pod", "g-launcher"), "NVIDIA_VISIBLE_DEVICES"), "<unset>");
}

TEST(DesiredObjectsTest, VolcanoGang) {
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kVolcano;
  model::Job job = MakePyTorchJob("ns", "g")
                       .Master(1)
                       .Workers(3)
                       .Queue("q1")
                       .PriorityClass("high")
                       .MinResource("cpu", "8")
                       .Build();
  auto objs = DesiredObjects(job, config);
  ASSERT_TRUE(objs.ok());
  EXPECT_EQ((*objs)[0].kind, "PodGroup");
  EXPECT_EQ((*objs)[0].body["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ((*objs)[0].body["spec"],
            Json::parse(R"({"minMember":4,"queue":"q1","priorityClassName":"high",
                "minResources":{"cpu":"8"}})"));
  const KubeObject& pod = Find(*objs, "Pod", "g-worker-2");
  EXPECT_EQ(pod.body["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(pod.body["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "g");
  EXPECT_EQ(pod.body["metadata"]["annotations"]["volcano.sh/task-spec"], "worker");
}

TEST(DesiredObjectsTest, SchedulerPluginsGang) {
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kSchedulerPlugins;
  model::Job job =
      MakeJAXJob("ns", "g").Workers(4).MinAvailable(2).ScheduleTimeoutSeconds(60).Build();
  auto objs = DesiredObjects(job, config);
  ASSERT_TRUE(objs.ok());
  EXPECT_EQ((*objs)[0].body["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((*objs)[0].body["spec"], Json::parse(R"({"minMember":2,"scheduleTimeoutSeconds":60})"));
  const KubeObject& pod = Find(*objs, "Pod", "g-worker-0");
  EXPECT_EQ(pod.body["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_EQ(pod.body["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "g");
}

TEST(DesiredObjectsTest, AddressPlanRewritesEveryAddress) {
  const model::ReconcileConfig local = LocalConfig();
  auto pt = DesiredObjects(SeedPyTorchJob(), local);
  ASSERT_TRUE(pt.ok());
  EXPECT_EQ(EnvValue(Find(*pt, "Pod", "pytorch-mnist-worker-1"), "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(EnvValue(Find(*pt, "Pod", "pytorch-mnist-worker-1"), "MASTER_PORT"), "40006");
  auto el = DesiredObjects(MakePyTorchJob("ns", "el").Workers(2).Elastic(2, 2).Build(), local);
  ASSERT_TRUE(el.ok());
  EXPECT_EQ(EnvValue(Find(*el, "Pod", "el-worker-1"), "PET_RDZV_ENDPOINT"), "127.0.0.1:40106");
  auto tf = DesiredObjects(MakeTFJob("ns", "tf").PS(1).Workers(1).Build(), local);
  ASSERT_TRUE(tf.ok());
  EXPECT_EQ(EnvValue(Find(*tf, "Pod", "tf-ps-0"), "TF_CONFIG"),
            R"({"cluster":{"ps":["local-ps0:40002"],"worker":["local-worker0:40102"]},)"
            R"("task":{"type":"ps","index":0},"environment":"cloud"})");
  auto xg = DesiredObjects(MakeXGBoostJob("ns", "xg").Master(1).Workers(2).Build(), local);
  ASSERT_TRUE(xg.ok());
  EXPECT_EQ(EnvValue(Find(*xg, "Pod", "xg-worker-0"), "MASTER_PORT"), "40009");
  EXPECT_EQ(EnvValue(Find(*xg, "Pod", "xg-worker-0"), "WORKER_ADDRS"), "127.0.0.1,127.0.0.1");
  EXPECT_EQ(EnvValue(Find(*xg, "Pod", "xg-worker-0"), "WORKER_PORT"), "40109");
  auto jx = DesiredObjects(MakeJAXJob("ns", "jx").Workers(2).Build(), local);
  ASSERT_TRUE(jx.ok());
  EXPECT_EQ(EnvValue(Find(*jx, "Pod", "jx-worker-1"), "COORDINATOR_ADDRESS"), "127.0.0.1");
  EXPECT_EQ(EnvValue(Find(*jx, "Pod", "jx-worker-1"), "COORDINATOR_PORT"), "40106");
  auto pd = DesiredObjects(MakePaddleJob("ns", "pd").Workers(2).Build(), local);
  ASSERT_TRUE(pd.ok());
  // Without pod IPs rank 0 names itself through the plan too.
  EXPECT_EQ(EnvValue(Find(*pd, "Pod", "pd-worker-0"), "PADDLE_MASTER"), "127.0.0.1:40103");
  EXPECT_EQ(EnvValue(Find(*pd, "Pod", "pd-worker-0"), "POD_IP_DUMMY"), "<unset>");
  auto mpi = DesiredObjects(MakeMPIJob("ns", "m").Launcher(1).Workers(2).Build(), local);
  ASSERT_TRUE(mpi.ok());
  EXPECT_EQ(Find(*mpi, "ConfigMap", "m-config").body["data"]["hostfile"],
            "127.0.0.1 slots=1\n127.0.0.1 slots=1\n");
}

TEST(DesiredObjectsTest, DiscoverHostsListsRunningWorkersSorted) {
  model::Job job = MakeMPIJob("ns", "m").Launcher(1).Workers(12).Build();
  KubernetesAddressPlan plan;
  EXPECT_EQ(MpiDiscoverHosts(job, plan, {2, 10}),
            "#!/bin/sh\necho m-worker-10:1\necho m-worker-2:1");
}

}  // namespace
}  // namespace coach::reconcile
