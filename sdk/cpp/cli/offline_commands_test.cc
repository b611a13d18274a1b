#include "sdk/cpp/cli/offline_commands.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/testing/test_dir.h"
#include "sdk/cpp/cli/exit_codes.h"

namespace coach::cli {
namespace {

using nlohmann::json;

std::string SeedManifest() { return "sdk/cpp/cli/testdata/pytorch-mnist.yaml"; }

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::coach::testing::FreshTestDir("offline_commands") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::map<std::string, std::string> EnvOf(const json& pod) {
  std::map<std::string, std::string> env;
  for (const json& var : pod["spec"]["containers"][0]["env"]) {
    if (var.contains("value")) env[var["name"]] = var["value"];
  }
  return env;
}

TEST(RenderTest, SeedPyTorchJobGivesThreePodsAndServicesWiredAsUpstream) {
  OfflineOptions options{SeedManifest(), "json", "", "", ""};
  std::ostringstream out, err;
  ASSERT_EQ(RunRender(options, out, err), kExitOk) << err.str();
  json list = json::parse(out.str());
  EXPECT_EQ(list["apiVersion"], "v1");
  EXPECT_EQ(list["kind"], "List");

  std::map<std::string, json> pods, services;
  for (const json& item : list["items"]) {
    if (item["kind"] == "Pod") pods[item["metadata"]["name"]] = item;
    if (item["kind"] == "Service") services[item["metadata"]["name"]] = item;
  }
  ASSERT_EQ(pods.size(), 3u);
  ASSERT_EQ(services.size(), 3u);

  const std::map<std::string, std::string> expected_rank = {{"pytorch-mnist-master-0", "0"},
                                                            {"pytorch-mnist-worker-0", "1"},
                                                            {"pytorch-mnist-worker-1", "2"}};
  for (const auto& [name, rank] : expected_rank) {
    SCOPED_TRACE(name);
    ASSERT_EQ(pods.count(name), 1u);
    ASSERT_EQ(services.count(name), 1u);
    const json& pod = pods[name];
    EXPECT_EQ(pod["metadata"]["namespace"], "default");
    std::map<std::string, std::string> env = EnvOf(pod);
    EXPECT_EQ(env["MASTER_ADDR"], "pytorch-mnist-master-0");
    EXPECT_EQ(env["MASTER_PORT"], "23456");
    EXPECT_EQ(env["WORLD_SIZE"], "3");
    EXPECT_EQ(env["RANK"], rank);
    EXPECT_EQ(env["PET_NODE_RANK"], rank);
    EXPECT_EQ(env["PET_NNODES"], "3");
    EXPECT_EQ(env["PET_NPROC_PER_NODE"], "auto");
    EXPECT_EQ(env["PYTHONUNBUFFERED"], "1");
    const json& labels = pod["metadata"]["labels"];
    EXPECT_EQ(labels["training.kubeflow.org/job-name"], "pytorch-mnist");
    EXPECT_EQ(labels["training.kubeflow.org/operator-name"], "pytorchjob-controller");
    EXPECT_EQ(services[name]["spec"]["clusterIP"], "None");
  }
  EXPECT_EQ(pods["pytorch-mnist-master-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"],
            "master");
  // Workers wait for the Master's name as upstream's do, with coach-launch from coach's image.
  EXPECT_FALSE(pods["pytorch-mnist-master-0"]["spec"].contains("initContainers"));
  for (const char* worker : {"pytorch-mnist-worker-0", "pytorch-mnist-worker-1"}) {
    const json& init = pods[worker]["spec"]["initContainers"];
    ASSERT_EQ(init.size(), 1u) << worker;
    EXPECT_EQ(init[0]["name"], "init-pytorch");
    EXPECT_EQ(init[0]["command"][2], "pytorch-mnist-master-0");
  }
}

TEST(RenderTest, YamlOutputIsOneDocumentPerObject) {
  OfflineOptions options{SeedManifest(), "yaml", "team-a", "", ""};
  std::ostringstream out, err;
  ASSERT_EQ(RunRender(options, out, err), kExitOk) << err.str();
  std::string text = out.str();
  size_t documents = 0;
  for (size_t at = text.find("---\n"); at != std::string::npos; at = text.find("---\n", at + 1)) {
    ++documents;
  }
  EXPECT_EQ(documents, 6u);
  EXPECT_NE(text.find("namespace: team-a"), std::string::npos);
}

TEST(ValidateTest, PrintsDefaultedJob) {
  OfflineOptions options{SeedManifest(), "json", "", "", ""};
  std::ostringstream out, err;
  ASSERT_EQ(RunValidate(options, out, err), kExitOk) << err.str();
  json job = json::parse(out.str());
  if (job.is_array()) job = job[0];
  if (job.contains("items")) job = job["items"][0];
  EXPECT_EQ(job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(job["spec"]["runPolicy"]["cleanPodPolicy"], "None");
}

TEST(ValidateTest, ReportsEveryErrorWithItsFieldAndExitsOne) {
  std::string path = WriteTemp("bad.yaml", R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: Bad_Name}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: -1, template: {spec: {containers: [{name: pytorch}]}}}
)");
  OfflineOptions options{path, "yaml", "", "", ""};
  std::ostringstream out, err;
  EXPECT_EQ(RunValidate(options, out, err), kExitInvalid);
  EXPECT_EQ(out.str(), "");
  EXPECT_NE(err.str().find("metadata.name"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("spec.pytorchReplicaSpecs.Worker.replicas"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image"),
            std::string::npos)
      << err.str();
}

TEST(ValidateTest, ConflictingNamespaceIsAnError) {
  std::string path = WriteTemp("ns.yaml", R"(apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jax, namespace: prod}
spec:
  jaxReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: jax, image: jax:latest}]}}}
)");
  OfflineOptions options{path, "yaml", "dev", "", ""};
  std::ostringstream out, err;
  EXPECT_EQ(RunValidate(options, out, err), kExitInvalid);
  EXPECT_NE(err.str().find("metadata.namespace"), std::string::npos) << err.str();
}

// kubectl's rule: -n is needed only for jobs that name no namespace.
TEST(RenderTest, ManifestNamingItsNamespaceNeedsNoFlag) {
  std::string path = WriteTemp("own-ns.yaml", R"(apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: jax, namespace: kubeflow}
spec:
  jaxReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: jax, image: jax:latest}]}}}
)");
  for (const char* flag : {"", "kubeflow"}) {
    SCOPED_TRACE(flag);
    OfflineOptions options{path, "json", flag, "", ""};
    std::ostringstream out, err;
    EXPECT_EQ(RunRender(options, out, err), kExitOk) << err.str();
    EXPECT_EQ(err.str(), "");
    json list = json::parse(out.str());
    ASSERT_EQ(list["items"].size(), 4u);  // 2 pods + 2 services
    for (const json& item : list["items"]) EXPECT_EQ(item["metadata"]["namespace"], "kubeflow");
    std::ostringstream vout, verr;
    EXPECT_EQ(RunValidate(options, vout, verr), kExitOk) << verr.str();
  }
}

TEST(RenderTest, KarpenterPlacesTheSeedsGpuReplicasOnTheGpuPool) {
  OfflineOptions options{SeedManifest(), "json", "", "", ""};
  karpenter::ConfigFlags placement;
  placement.enabled = true;
  std::ostringstream out, err;
  ASSERT_EQ(RunRender(options, placement, out, err), kExitOk) << err.str();
  int pods = 0;
  const json list = json::parse(out.str());
  for (const json& item : list["items"]) {
    if (item["kind"] != "Pod") continue;
    ++pods;
    SCOPED_TRACE(item["metadata"]["name"].get<std::string>());
    EXPECT_EQ(item["spec"]["nodeSelector"]["karpenter.sh/nodepool"], "gpu-workloads");
    EXPECT_EQ(item["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
    EXPECT_EQ(item["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"], "true");
  }
  EXPECT_EQ(pods, 3);
}

TEST(RenderTest, BadKarpenterFlagIsAUsageError) {
  OfflineOptions options{SeedManifest(), "json", "", "", ""};
  karpenter::ConfigFlags placement;
  placement.enabled = true;
  placement.zone_policy = "strict";
  std::ostringstream out, err;
  EXPECT_EQ(RunRender(options, placement, out, err), kExitUsage);
  EXPECT_NE(err.str().find("--karpenter-zone-policy"), std::string::npos) << err.str();
}

TEST(ValidateTest, MissingFileIsAnError) {
  OfflineOptions options{"/nonexistent/job.yaml", "yaml", "", "", ""};
  std::ostringstream out, err;
  EXPECT_EQ(RunValidate(options, out, err), kExitInvalid);
  EXPECT_NE(err.str().find("/nonexistent/job.yaml"), std::string::npos);
}

}  // namespace
}  // namespace coach::cli

namespace coach::cli {
namespace {

std::string SharedFile(const std::string& relative) {
  const char* dir = std::getenv("COACH_SHARED_DIR");
  EXPECT_NE(dir, nullptr) << "COACH_SHARED_DIR must point at the shared folder";
  return std::string(dir != nullptr ? dir : "") + "/" + relative;
}

// Upstream's example file: a ClusterTrainingRuntime and the TrainJob that names it, in one file.
TEST(RenderTest, ATrainJobWithItsRuntimeInTheInputRendersEveryPod) {
  OfflineOptions options{
      SharedFile("reference/kubeflow-v2/examples/yaml/04-volcano-integration.yaml"), "json", "", "",
      "volcano"};
  std::ostringstream out, err;
  ASSERT_EQ(RunRender(options, out, err), kExitOk) << err.str();
  const json list = json::parse(out.str());
  std::vector<json> pods;
  bool service = false, pod_group = false;
  for (const json& item : list["items"]) {
    if (item["kind"] == "Pod") pods.push_back(item);
    if (item["kind"] == "PodGroup") pod_group = item["spec"]["minMember"] == 4;
    if (item["kind"] == "Service") service = item["metadata"]["name"] == "volcano-example";
  }
  EXPECT_TRUE(service);
  ASSERT_EQ(pods.size(), 4u) << out.str();
  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_EQ(pods[i]["spec"]["hostname"], "volcano-example-node-0-" + std::to_string(i));
    EXPECT_EQ(EnvOf(pods[i])["PET_NNODES"], "4");
    EXPECT_EQ(pods[i]["metadata"]["annotations"]["scheduling.k8s.io/group-name"],
              "volcano-example");
  }
  EXPECT_TRUE(pod_group);

  // The runtime asks for Volcano: an operator without it waits, naming the flag; so does render.
  options.gang_scheduler = "none";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRender(options, out2, err2), kExitInvalid);
  EXPECT_NE(err2.str().find("--gang-scheduler=volcano"), std::string::npos) << err2.str();
}

TEST(RenderTest, ATrainJobFindsItsRuntimeUnderTrainingRuntimes) {
  const std::string job = WriteTemp("tj.yaml", R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: mnist}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2, command: [torchrun, train.py]}
)");
  OfflineOptions options{job, "json", "", "", ""};
  std::ostringstream out, err;
  // No runtime: exit 1, naming the field and how to give one.
  EXPECT_EQ(RunRender(options, out, err), kExitInvalid);
  EXPECT_NE(err.str().find("mnist: spec.runtimeRef: ClusterTrainingRuntime \"torch-distributed\" "
                           "is not in the input"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("--training-runtimes"), std::string::npos) << err.str();

  options.training_runtimes = SharedFile("reference/kubeflow-v2/runtimes");
  std::ostringstream out2, err2;
  ASSERT_EQ(RunRender(options, out2, err2), kExitOk) << err2.str();
  int pods = 0;
  const json list = json::parse(out2.str());
  for (const json& item : list["items"]) {
    if (item["kind"] != "Pod") continue;
    ++pods;
    EXPECT_EQ(EnvOf(item)["PET_MASTER_ADDR"], "mnist-node-0-0.mnist");
  }
  EXPECT_EQ(pods, 2);
}

// What upstream's webhook refuses is refused here too, naming the field.
TEST(RenderTest, ATrainJobItsRuntimeRefusesIsExitOneNamingTheField) {
  const std::string job = WriteTemp("mpi.yaml", R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: bad}
spec:
  runtimeRef: {name: deepspeed-distributed}
  trainer:
    numNodes: 2
    env: [{name: OMPI_MCA_plm_rsh_args, value: "-o x"}]
)");
  OfflineOptions options{job, "yaml", "", "", ""};
  options.training_runtimes = SharedFile("reference/kubeflow-v2/runtimes");
  std::ostringstream out, err;
  EXPECT_EQ(RunRender(options, out, err), kExitInvalid);
  EXPECT_NE(err.str().find("spec.trainer.env"), std::string::npos) << err.str();
  EXPECT_TRUE(out.str().empty());
}

}  // namespace
}  // namespace coach::cli
