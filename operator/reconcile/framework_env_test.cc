#include "operator/reconcile/framework_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "operator/model/kubernetes_address_plan.h"
#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/mlflow_env.h"

// Expected values: kubeflow-v1.md, "Environment wiring per framework" (upstream v1.9.4's
// pytorch/envvar.go and elastic.go, tensorflow/tensorflow.go, xgboost/xgboost.go,
// paddlepaddle/envvar.go, jax/envvar.go). MLflow is coach's own: mlflow_env.h.
// Each case is one replica: its container 0's env, "NAME=value" in order
// ("NAME=<status.podIP>" for a downward-API value).

namespace coach::reconcile {
namespace {

using model::Json;
using ::testing::ElementsAreArray;
using namespace coach::reconcile::testing;  // NOLINT

struct Case {
  const char* scenario;
  model::Job job;
  const char* type;
  int index;
  std::vector<std::string> env;
};

std::vector<std::string> EnvOf(const Json& container) {
  std::vector<std::string> out;
  for (const Json& e : container.value("env", Json::array())) {
    const std::string value =
        e.contains("value")
            ? e["value"].get<std::string>()
            : "<" + e["valueFrom"]["fieldRef"]["fieldPath"].get<std::string>() + ">";
    out.push_back(e["name"].get<std::string>() + "=" + value);
  }
  return out;
}

// The env SetClusterSpec gives container `container` of the replica.
std::vector<std::string> Wire(const Case& c, const std::string& cluster_domain = "",
                              size_t container = 0) {
  KubernetesAddressPlan plan(cluster_domain);
  absl::StatusOr<Json> tmpl = ParseTemplate(c.job, c.type);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  absl::Status wired = SetClusterSpec(ReplicaRef{c.job, c.type, c.index, plan}, *tmpl);
  EXPECT_TRUE(wired.ok()) << wired;
  return EnvOf((*tmpl)["spec"]["containers"][container]);
}

void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.scenario) + " (" + c.type + "-" + std::to_string(c.index) + ")");
    EXPECT_THAT(Wire(c), ElementsAreArray(c.env));
  }
}

TEST(FrameworkEnvTest, PyTorch) {
  const model::Job mw = MakePyTorchJob("ns", "p").Master(1).Workers(2).Build();
  const model::Job n4 = MakePyTorchJob("ns", "p").Master(1).Workers(1).NprocPerNode("4").Build();
  const model::Job gpu = MakePyTorchJob("ns", "p").Master(1).Workers(1).NprocPerNode("gpu").Build();
  const model::Job w = MakePyTorchJob("ns", "p").Workers(2).Build();
  const model::Job el = MakePyTorchJob("ns", "p").Workers(2).Elastic(1, 3).Build();
  model::Job el_own = el;
  api::v1::RdzvConf* own = el_own.mutable_spec()->mutable_elastic_policy()->add_rdzv_conf();
  own->set_key("keep_alive_interval");
  own->set_value("7");
  const model::Job el_min = MakePyTorchJob("ns", "p").Workers(2).Elastic(2, std::nullopt).Build();
  const model::Job el_none =
      MakePyTorchJob("ns", "p").Workers(3).Elastic(std::nullopt, std::nullopt).RdzvId("r1").Build();
  // clang-format off
  RunCases({
      {"master", mw, "Master", 0, {"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "MASTER_ADDR=p-master-0", "PET_MASTER_PORT=23456", "PET_MASTER_ADDR=p-master-0", "WORLD_SIZE=3", "RANK=0", "PET_NPROC_PER_NODE=auto", "PET_NODE_RANK=0", "PET_NNODES=3"}},
      {"worker rank is index + 1", mw, "Worker", 1, {"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "MASTER_ADDR=p-master-0", "PET_MASTER_PORT=23456", "PET_MASTER_ADDR=p-master-0", "WORLD_SIZE=3", "RANK=2", "PET_NPROC_PER_NODE=auto", "PET_NODE_RANK=2", "PET_NNODES=3"}},
      {"nprocPerNode 4 multiplies WORLD_SIZE", n4, "Worker", 0, {"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "MASTER_ADDR=p-master-0", "PET_MASTER_PORT=23456", "PET_MASTER_ADDR=p-master-0", "WORLD_SIZE=8", "RANK=1", "PET_NPROC_PER_NODE=4", "PET_NODE_RANK=1", "PET_NNODES=2"}},
      {"nprocPerNode gpu counts as 1", gpu, "Master", 0, {"PYTHONUNBUFFERED=1", "MASTER_PORT=23456", "MASTER_ADDR=p-master-0", "PET_MASTER_PORT=23456", "PET_MASTER_ADDR=p-master-0", "WORLD_SIZE=2", "RANK=0", "PET_NPROC_PER_NODE=gpu", "PET_NODE_RANK=0", "PET_NNODES=2"}},
      {"no master: no master, rank or world size", w, "Worker", 1, {"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=auto", "PET_NNODES=2"}},
      {"elastic min:max", el, "Worker", 0, {"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=auto", "PET_RDZV_ENDPOINT=p-worker-0:23456", "PET_RDZV_BACKEND=c10d", "PET_NNODES=1:3", "PET_RDZV_CONF=keep_alive_interval=1", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"}},
      {"the job's own heartbeat wins", el_own, "Worker", 0, {"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=auto", "PET_RDZV_ENDPOINT=p-worker-0:23456", "PET_RDZV_BACKEND=c10d", "PET_NNODES=1:3", "PET_RDZV_CONF=keep_alive_interval=7", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"}},
      {"elastic min only: copied to max", el_min, "Worker", 1, {"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=auto", "PET_RDZV_ENDPOINT=p-worker-0:23456", "PET_RDZV_BACKEND=c10d", "PET_NNODES=2:2", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"}},
      {"elastic without bounds: Worker replicas; rdzvId", el_none, "Worker", 2, {"PYTHONUNBUFFERED=1", "PET_NPROC_PER_NODE=auto", "PET_RDZV_ENDPOINT=p-worker-0:23456", "PET_RDZV_BACKEND=c10d", "PET_NNODES=3", "PET_RDZV_ID=r1", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"}},
  });
  // clang-format on
}

std::string TfConfig(const char* cluster, const char* type, int index) {
  return std::string("TF_CONFIG={\"cluster\":") + cluster + ",\"task\":{\"type\":\"" + type +
         "\",\"index\":" + std::to_string(index) + "},\"environment\":\"cloud\"}";
}

TEST(FrameworkEnvTest, TensorFlow) {
  const model::Job pw = MakeTFJob("ns", "t").PS(1).Workers(2).Build();
  const model::Job cw = MakeTFJob("ns", "t").Chief(1).Workers(1).Evaluator(1).Build();
  const model::Job one = MakeTFJob("ns", "t").Workers(1).Build();
  const model::Job dyn = MakeTFJob("ns", "t").PS(1).Workers(2).EnableDynamicWorker(true).Build();
  const char* pw_cluster =
      R"({"ps":["t-ps-0.ns.svc:2222"],"worker":["t-worker-0.ns.svc:2222","t-worker-1.ns.svc:2222"]})";
  const char* cw_cluster =
      R"({"chief":["t-chief-0.ns.svc:2222"],"worker":["t-worker-0.ns.svc:2222"]})";
  // clang-format off
  RunCases({
      {"worker", pw, "Worker", 1, {TfConfig(pw_cluster, "worker", 1)}},
      {"ps", pw, "PS", 0, {TfConfig(pw_cluster, "ps", 0)}},
      {"chief; the evaluator is not in the cluster", cw, "Chief", 0, {TfConfig(cw_cluster, "chief", 0)}},
      {"evaluator", cw, "Evaluator", 0, {TfConfig(cw_cluster, "evaluator", 0)}},
      {"one replica in all: no TF_CONFIG", one, "Worker", 0, {}},
      {"enableDynamicWorker: sparse cluster", dyn, "Worker", 1, {R"(TF_CONFIG={"sparseCluster":{"worker":{"1":"t-worker-1.ns.svc:2222"},"ps":["t-ps-0.ns.svc:2222"]},"task":{"type":"worker","index":1}})"}},
      {"enableDynamicWorker: ps", dyn, "PS", 0, {R"(TF_CONFIG={"sparseCluster":{"worker":{},"ps":["t-ps-0.ns.svc:2222"]},"task":{"type":"ps","index":0}})"}},
  });
  // clang-format on
}

TEST(FrameworkEnvTest, TensorFlowClusterDomainAndContainers) {
  const model::Job job =
      MakeTFJob("ns", "t")
          .Workers(2)
          .Template("Worker", R"({"spec":{"containers":[{"name":"sidecar","image":"s"},
                                  {"name":"tensorflow","image":"i","ports":[{"name":"tfjob-port","containerPort":3333}]}]}})")
          .Build();
  const Case c{"", job, "Worker", 0, {}};
  // Only the container named tensorflow gets TF_CONFIG; its tfjob-port is the cluster's port.
  EXPECT_THAT(Wire(c, "cluster.local", 0), ElementsAreArray(std::vector<std::string>{}));
  EXPECT_THAT(
      Wire(c, "cluster.local", 1),
      ElementsAreArray({TfConfig(
          R"({"worker":["t-worker-0.ns.svc.cluster.local:3333","t-worker-1.ns.svc.cluster.local:3333"]})",
          "worker", 0)}));
}

TEST(FrameworkEnvTest, XGBoost) {
  const model::Job mw = MakeXGBoostJob("ns", "x").Master(1).Workers(2).Build();
  const model::Job m = MakeXGBoostJob("ns", "x").Master(1).Build();
  // clang-format off
  RunCases({
      {"master", mw, "Master", 0, {"MASTER_PORT=9999", "MASTER_ADDR=x-master-0", "WORLD_SIZE=3", "RANK=0", "PYTHONUNBUFFERED=1", "WORKER_PORT=9999", "WORKER_ADDRS=x-worker-0,x-worker-1"}},
      {"worker rank is index + masters", mw, "Worker", 1, {"MASTER_PORT=9999", "MASTER_ADDR=x-master-0", "WORLD_SIZE=3", "RANK=2", "PYTHONUNBUFFERED=1", "WORKER_PORT=9999", "WORKER_ADDRS=x-worker-0,x-worker-1"}},
      {"master alone: no worker variables", m, "Master", 0, {"MASTER_PORT=9999", "MASTER_ADDR=x-master-0", "WORLD_SIZE=1", "RANK=0", "PYTHONUNBUFFERED=1"}},
  });
  // clang-format on
}

TEST(FrameworkEnvTest, Paddle) {
  const model::Job collective = MakePaddleJob("ns", "pd").Workers(2).Build();
  const model::Job ps = MakePaddleJob("ns", "pd").Master(1).Workers(1).Build();
  // clang-format off
  RunCases({
      {"collective rank 0: its pod IP", collective, "Worker", 0, {"PYTHONUNBUFFERED=1", "PADDLE_JOB_ID=pd", "PADDLE_NNODES=2", "POD_IP_DUMMY=<status.podIP>", "PADDLE_MASTER=$(POD_IP_DUMMY):36543"}},
      {"collective others: worker 0", collective, "Worker", 1, {"PYTHONUNBUFFERED=1", "PADDLE_JOB_ID=pd", "PADDLE_NNODES=2", "PADDLE_MASTER=pd-worker-0:36543"}},
      {"PS master 0: its pod IP, server", ps, "Master", 0, {"PYTHONUNBUFFERED=1", "PADDLE_JOB_ID=pd", "PADDLE_NNODES=2", "POD_IP_DUMMY=<status.podIP>", "PADDLE_MASTER=$(POD_IP_DUMMY):36543", "PADDLE_SERVER_NUM=1"}},
      {"PS worker: master 0, trainer", ps, "Worker", 0, {"PYTHONUNBUFFERED=1", "PADDLE_JOB_ID=pd", "PADDLE_NNODES=2", "PADDLE_MASTER=pd-master-0:36543", "PADDLE_TRAINER_NUM=1"}},
  });
  // clang-format on
}

TEST(FrameworkEnvTest, Jax) {
  const model::Job job = MakeJAXJob("ns", "j").Workers(3).Build();
  // clang-format off
  RunCases({
      {"worker 0 coordinates", job, "Worker", 0, {"PYTHONUNBUFFERED=1", "COORDINATOR_PORT=6666", "COORDINATOR_ADDRESS=j-worker-0", "NUM_PROCESSES=3", "PROCESS_ID=0"}},
      {"worker 2", job, "Worker", 2, {"PYTHONUNBUFFERED=1", "COORDINATOR_PORT=6666", "COORDINATOR_ADDRESS=j-worker-0", "NUM_PROCESSES=3", "PROCESS_ID=2"}},
  });
  // clang-format on
}

TEST(FrameworkEnvTest, MpiHasNoClusterSpec) {
  const model::Job job = MakeMPIJob("ns", "m").Launcher(1).Workers(2).Build();
  RunCases({{"launcher (wired by mpi_objects)", job, "Launcher", 0, {}},
            {"worker", job, "Worker", 1, {}}});
}

TEST(FrameworkEnvTest, Mlflow) {
  struct MlflowCase {
    const char* scenario;
    std::vector<std::pair<const char*, const char*>> annotations;
    const char* operator_uri;
    std::vector<std::pair<std::string, std::string>> forwarded;
    std::vector<std::string> env;
  };
  const std::string kContext =
      R"(MLFLOW_RUN_CONTEXT={"coach.job_name":"j","coach.job_uid":"uid-j","coach.kind":"JAXJob",)"
      R"("coach.namespace":"ns","coach.replica":"worker-0","coach.replica_index":"0",)"
      R"("coach.replica_type":"Worker"})";
  const std::string kContextWithRun =
      kContext.substr(0, kContext.size() - 1) + R"(,"mlflow.parentRunId":"r"})";
  // clang-format off
  const MlflowCase cases[] = {
      {"not tracked", {}, "", {}, {}},
      {"operator-wide server", {}, "http://ml:5000", {}, {"MLFLOW_TRACKING_URI=http://ml:5000", "MLFLOW_EXPERIMENT_NAME=coach", kContext}},
      {"job's own server and experiment", {{"coach.dev/mlflow-tracking-uri", "http://j:1"}, {"coach.dev/mlflow-experiment", "exp"}}, "http://ml:5000", {}, {"MLFLOW_TRACKING_URI=http://j:1", "MLFLOW_EXPERIMENT_NAME=exp", kContext}},
      {"opted out", {{"coach.dev/mlflow", "false"}}, "http://ml:5000", {}, {}},
      {"opted in without a server", {{"coach.dev/mlflow", "true"}}, "", {}, {}},
      {"run exists", {{"coach.dev/mlflow-run-id", "r"}, {"coach.dev/mlflow-experiment-id", "7"}}, "http://ml:5000", {}, {"MLFLOW_TRACKING_URI=http://ml:5000", "MLFLOW_EXPERIMENT_NAME=coach", kContextWithRun, "COACH_MLFLOW_RUN_ID=r", "COACH_MLFLOW_EXPERIMENT_ID=7", "COACH_MLFLOW_TRACKING_URI=http://ml:5000", "COACH_MLFLOW_REPLICA=worker-0", "COACH_MLFLOW_RESUME=1"}},
      {"forwarded credentials", {}, "http://ml:5000", {{"MLFLOW_TRACKING_TOKEN", "t"}}, {"MLFLOW_TRACKING_URI=http://ml:5000", "MLFLOW_EXPERIMENT_NAME=coach", kContext, "MLFLOW_TRACKING_TOKEN=t"}},
  };
  // clang-format on
  for (const MlflowCase& c : cases) {
    SCOPED_TRACE(c.scenario);
    model::Job job = MakeJAXJob("ns", "j").Workers(1).Build();
    for (const auto& [k, v] : c.annotations)
      (*job.mutable_metadata()->mutable_annotations())[k] = v;
    model::MlflowConfig config;
    config.tracking_uri = c.operator_uri;
    config.forwarded_env = c.forwarded;
    Json tmpl = *ParseTemplate(job, "Worker");
    AddMlflowEnv(job, config, "Worker", 0, tmpl);
    EXPECT_THAT(EnvOf(tmpl["spec"]["containers"][0]), ElementsAreArray(c.env));
  }
  // A variable the container sets itself is left alone.
  model::Job job = MakeJAXJob("ns", "j")
                       .Workers(1)
                       .Template("Worker", R"({"spec":{"containers":[{"name":"jax","image":"i",
                                 "env":[{"name":"MLFLOW_EXPERIMENT_NAME","value":"mine"}]}]}})")
                       .Build();
  model::MlflowConfig config;
  config.tracking_uri = "http://ml:5000";
  Json tmpl = *ParseTemplate(job, "Worker");
  AddMlflowEnv(job, config, "Worker", 0, tmpl);
  const std::vector<std::string> env = EnvOf(tmpl["spec"]["containers"][0]);
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], "MLFLOW_EXPERIMENT_NAME=mine");
  EXPECT_EQ(env[1], "MLFLOW_TRACKING_URI=http://ml:5000");
  EXPECT_EQ(env[2].rfind("MLFLOW_RUN_CONTEXT=", 0), 0u);
}

}  // namespace
}  // namespace coach::reconcile
