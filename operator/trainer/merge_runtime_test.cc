#include "operator/trainer/merge_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "operator/trainer/realize.h"
#include "operator/trainer/reference_data.h"

namespace coach::trainer {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json Load(const std::string& path, const std::string& kind) {
  absl::StatusOr<json> doc = testing::LoadReferenceKind(path, kind);
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? *doc : json::object();
}

json Runtime(const std::string& path) { return Load("runtimes/" + path, "ClusterTrainingRuntime"); }

json Job(const MergedTrainJob& m, const std::string& name) {
  for (const json& j : m.job_set["spec"]["replicatedJobs"]) {
    if (j["name"] == name) return j;
  }
  ADD_FAILURE() << "no job " << name;
  return json::object();
}

json Container(const MergedTrainJob& m, const std::string& job, const std::string& name) {
  const json rjob = Job(m, job);
  for (const json& c : rjob["template"]["spec"]["template"]["spec"]["containers"]) {
    if (c["name"] == name) return c;
  }
  ADD_FAILURE() << "no container " << name << " in " << job;
  return json::object();
}

json Env(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array())) {
    if (e["name"] == name) return e;
  }
  return json();
}

std::vector<std::string> EnvNames(const json& container) {
  std::vector<std::string> names;
  for (const json& e : container.value("env", json::array())) names.push_back(e["name"]);
  return names;
}

json CompletionIndexRef() {
  return {{"fieldRef",
           {{"fieldPath", "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}};
}

// A TrainJob `name` on `runtime` (a ClusterTrainingRuntime) with spec.trainer `trainer`.
json TrainJob(const std::string& name, const std::string& runtime, json trainer) {
  json j = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
            {"kind", "TrainJob"},
            {"metadata", {{"name", name}}},
            {"spec", {{"runtimeRef", {{"name", runtime}}}}}};
  if (!trainer.is_null()) j["spec"]["trainer"] = std::move(trainer);
  return testing::WithDefaults(j);
}

MergedTrainJob MustMerge(const json& train_job, const json& runtime) {
  absl::StatusOr<MergedTrainJob> m = MergeRuntime(train_job, runtime);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : MergedTrainJob{};
}

// Example 01 on torch-distributed: three nodes, torchrun's env, the port, the command.
TEST(MergeRuntimeTest, TorchMultiNodeExample) {
  MergedTrainJob m = MustMerge(Load("examples/yaml/01-multi-node.yaml", "TrainJob"),
                               Runtime("torch_distributed.yaml"));
  EXPECT_EQ(m.trainer_job, "node");
  EXPECT_EQ(m.job_set["metadata"]["name"], "multi-node-example");
  EXPECT_EQ(m.job_set["metadata"]["namespace"], "default");
  json job = Job(m, "node");
  EXPECT_EQ(job["replicas"], 1);
  EXPECT_EQ(job["template"]["spec"]["parallelism"], 3);
  EXPECT_EQ(job["template"]["spec"]["completions"], 3);
  json node = Container(m, "node", "node");
  EXPECT_EQ(node["image"], "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime");
  EXPECT_EQ(node["command"][0], "torchrun");
  EXPECT_EQ(EnvNames(node),
            (std::vector<std::string>{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK",
                                      "PET_MASTER_ADDR", "PET_MASTER_PORT"}));
  EXPECT_EQ(Env(node, "PET_NNODES")["value"], "3");
  EXPECT_EQ(Env(node, "PET_NPROC_PER_NODE")["value"], "1");  // no resources: one process
  EXPECT_EQ(Env(node, "PET_NODE_RANK")["valueFrom"], CompletionIndexRef());
  EXPECT_EQ(Env(node, "PET_MASTER_ADDR")["value"],
            "multi-node-example-node-0-0.multi-node-example");
  EXPECT_EQ(Env(node, "PET_MASTER_PORT")["value"], "29500");
  EXPECT_EQ(node["ports"], json::parse(R"([{"containerPort": 29500}])"));
  EXPECT_EQ(m.ml_policy["numNodes"], 3);
}

// Example 02: patch metadata on the JobSet, pod fields merged, trainer env before PET_*,
// resourcesPerNode sizing PET_NPROC_PER_NODE by its CPU request.
TEST(MergeRuntimeTest, RuntimePatchesExample) {
  MergedTrainJob m = MustMerge(Load("examples/yaml/02-runtime-patches.yaml", "TrainJob"),
                               Runtime("torch_distributed.yaml"));
  EXPECT_EQ(m.job_set["metadata"]["labels"],
            json::parse(R"({"team": "ml-platform", "cost-center": "research"})"));
  EXPECT_EQ(m.job_set["metadata"]["annotations"]["prometheus.io/port"], "8080");
  json pod = Job(m, "node")["template"]["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "training-sa");
  EXPECT_EQ(pod["nodeSelector"]["node-type"], "training");
  EXPECT_EQ(pod["tolerations"][0]["key"], "training-workload");
  json node = Container(m, "node", "node");
  EXPECT_EQ(EnvNames(node),
            (std::vector<std::string>{"CUSTOM_VAR", "PYTHONUNBUFFERED", "PET_NNODES",
                                      "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR",
                                      "PET_MASTER_PORT"}));
  EXPECT_EQ(Env(node, "PET_NPROC_PER_NODE")["value"], "2");
  EXPECT_EQ(node["resources"], json::parse(R"({"requests": {"cpu": "2", "memory": "4Gi"},
                                               "limits": {"cpu": "4", "memory": "8Gi"}})"));
}

// Example 03: suspend reaches the JobSet; the TrainJob's own labels do not.
TEST(MergeRuntimeTest, KueueExampleSuspendsAndKeepsTrainJobLabelsOff) {
  MergedTrainJob m = MustMerge(Load("examples/yaml/03-kueue-integration.yaml", "TrainJob"),
                               Runtime("torch_distributed.yaml"));
  EXPECT_EQ(m.job_set["spec"]["suspend"], true);
  EXPECT_FALSE(m.job_set["metadata"].contains("labels"));
  EXPECT_EQ(Container(m, "node", "node")["image"], "python:3.11-slim");
}

// Example 04: a Volcano runtime marks every pod template with its group.
TEST(MergeRuntimeTest, VolcanoExampleAnnotatesPods) {
  MergedTrainJob m =
      MustMerge(Load("examples/yaml/04-volcano-integration.yaml", "TrainJob"),
                Load("examples/yaml/04-volcano-integration.yaml", "ClusterTrainingRuntime"));
  EXPECT_EQ(Job(m, "node")["template"]["spec"]["template"]["metadata"]["annotations"]
                          ["scheduling.k8s.io/group-name"],
            "volcano-example");
  EXPECT_EQ(Job(m, "node")["template"]["spec"]["parallelism"], 4);
}

// Example 05: a TrainingRuntime with a dataset initializer ahead of the trainer.
TEST(MergeRuntimeTest, MultiStepExampleSetsStorageUri) {
  const std::string file = "examples/yaml/05-multi-step.yaml";
  MergedTrainJob m = MustMerge(Load(file, "TrainJob"), Load(file, "TrainingRuntime"));
  const json& jobs = m.job_set["spec"]["replicatedJobs"];
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0]["name"], "dataset-initializer");
  EXPECT_EQ(jobs[0]["replicas"], 1);
  EXPECT_EQ(jobs[0]["template"]["spec"]["parallelism"], 1);
  EXPECT_EQ(jobs[1]["template"]["spec"]["parallelism"], 2);
  EXPECT_EQ(Env(Container(m, "dataset-initializer", "dataset-initializer"), "STORAGE_URI")["value"],
            "hf://tatsu-lab/alpaca");
  EXPECT_EQ(jobs[1]["dependsOn"][0]["name"], "dataset-initializer");
}

TEST(MergeRuntimeTest, WithoutSpecTrainerNoFrameworkEnv) {
  for (const char* file :
       {"torch_distributed.yaml", "jax_distributed.yaml", "xgboost_distributed.yaml"}) {
    json runtime = Runtime(file);
    MergedTrainJob m = MustMerge(TrainJob("bare", runtime["metadata"]["name"], json()), runtime);
    json node = Container(m, "node", "node");
    EXPECT_FALSE(node.contains("env")) << file;
    EXPECT_FALSE(node.contains("ports")) << file;
    EXPECT_EQ(Job(m, "node")["template"]["spec"]["parallelism"], 1) << file;
  }
}

// PET_NPROC_PER_NODE: numProcPerNode when set; "auto" with GPUs; else CPUs rounded up.
TEST(MergeRuntimeTest, TorchProcessesPerNode) {
  struct Case {
    const char* scenario;
    const char* trainer;
    const char* want;
  };
  const Case cases[] = {
      {"numProcPerNode wins",
       R"({"numProcPerNode": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}})", "4"},
      {"a GPU: torchrun decides", R"({"resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}})",
       "auto"},
      {"any resource named gpu", R"({"resourcesPerNode": {"requests": {"amd.com/GPU": "1"}}})",
       "auto"},
      {"CPU request, a JSON float", R"({"resourcesPerNode": {"requests": {"cpu": 2.0}}})", "2"},
      {"request rounded up",
       R"({"resourcesPerNode": {"requests": {"cpu": "1500m"}, "limits": {"cpu": 8}}})", "2"},
      {"limits without requests", R"({"resourcesPerNode": {"limits": {"cpu": "3"}}})", "3"},
      {"below one CPU", R"({"resourcesPerNode": {"requests": {"cpu": "250m"}}})", "1"},
      {"no resources", R"({"numNodes": 2})", "1"},
  };
  json runtime = Runtime("torch_distributed.yaml");
  for (const Case& c : cases) {
    MergedTrainJob m =
        MustMerge(TrainJob("t", "torch-distributed", json::parse(c.trainer)), runtime);
    EXPECT_EQ(Env(Container(m, "node", "node"), "PET_NPROC_PER_NODE")["value"], c.want)
        << c.scenario;
  }
}

// resourcesPerNode merges key by key into the runtime's, numbers becoming quantities.
TEST(MergeRuntimeTest, ResourcesMergeKeyByKey) {
  json runtime = Runtime("torch_distributed.yaml");
  runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
         ["containers"][0]["resources"] = json::parse(
             R"({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": 1}})");
  MergedTrainJob m = MustMerge(
      TrainJob("t", "torch-distributed",
               json::parse(R"({"resourcesPerNode": {"requests": {"cpu": 2.0, "memory": 1.5}}})")),
      runtime);
  EXPECT_EQ(Container(m, "node", "node")["resources"],
            json::parse(R"({"requests": {"cpu": "2", "memory": "1500m"},
                            "limits": {"nvidia.com/gpu": "1"}})"));
}

TEST(MergeRuntimeTest, TrainerEnvUpsertsRuntimeEnv) {
  json runtime = Runtime("data-cache/torch_distributed_with_cache.yaml");
  MergedTrainJob m =
      MustMerge(TrainJob("cached", "torch-distributed-with-cache",
                         json::parse(R"({"env": [{"name": "EXTRA", "value": "x"}]})")),
                runtime);
  json node = Container(m, "node", "node");
  EXPECT_EQ(EnvNames(node),
            (std::vector<std::string>{"TRAIN_JOB_NAME", "EXTRA", "PET_NNODES", "PET_NPROC_PER_NODE",
                                      "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}));
  EXPECT_EQ(Container(m, "dataset-initializer", "dataset-initializer")["env"][0]["value"],
            "ghcr.io/kubeflow/trainer/data-cache:v2.3.0");
}

// DeepSpeed (MPI, launcher runs as a node): node pods = numNodes - 1, slots from the GPUs,
// the SSH secret in both, the hostfile and OMPI_* on the launcher, resources on both.
TEST(MergeRuntimeTest, DeepSpeedMpi) {
  json runtime = Runtime("deepspeed_distributed.yaml");
  MergedTrainJob m = MustMerge(
      TrainJob("ds", "deepspeed-distributed",
               json::parse(R"({"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 4}},
                               "env": [{"name": "A", "value": "1"}]})")),
      runtime);
  EXPECT_EQ(m.trainer_job, "launcher");
  EXPECT_EQ(Job(m, "node")["template"]["spec"]["parallelism"], 2);
  EXPECT_EQ(Job(m, "launcher")["template"]["spec"]["parallelism"], 1);
  EXPECT_EQ(m.ml_policy["mpi"]["numProcPerNode"], 4);
  json launcher = Container(m, "launcher", "node");
  EXPECT_EQ(EnvNames(launcher),
            (std::vector<std::string>{
                "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_orte_keep_fqdn_hostnames",
                "OMPI_MCA_orte_set_default_slots", "OMPI_MCA_plm_rsh_args", "A"}));
  EXPECT_EQ(Env(launcher, "OMPI_MCA_orte_default_hostfile")["value"], "/etc/mpi/hostfile");
  EXPECT_EQ(Env(launcher, "OMPI_MCA_orte_set_default_slots")["value"], "4");
  EXPECT_EQ(Env(launcher, "OMPI_MCA_plm_rsh_args")["value"], "-o ConnectionAttempts=10");
  EXPECT_EQ(launcher["volumeMounts"], json::parse(R"([
      {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
      {"name": "mpi-hostfile", "mountPath": "/etc/mpi"}])"));
  json node = Container(m, "node", "node");
  EXPECT_EQ(EnvNames(node), (std::vector<std::string>{"A"}));
  EXPECT_EQ(node["volumeMounts"],
            json::parse(R"([{"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}])"));
  EXPECT_EQ(node["resources"]["limits"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(launcher["resources"]["limits"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(node["command"][0], "/usr/sbin/sshd");  // the trainer command is the launcher's
  json volumes = Job(m, "launcher")["template"]["spec"]["template"]["spec"]["volumes"];
  EXPECT_EQ(volumes[0]["secret"]["secretName"], "ds-mpi-ssh-auth");
  EXPECT_EQ(volumes[0]["secret"]["defaultMode"], 0400);
  EXPECT_EQ(volumes[0]["secret"]["items"][0],
            json::parse(R"({"key": "ssh-privatekey", "path": "id_rsa", "mode": 416})"));
  EXPECT_EQ(volumes[1]["configMap"]["name"], "ds-mpi-hostfile");
}

TEST(MergeRuntimeTest, MlxSlotsFromNumProcPerNode) {
  MergedTrainJob m = MustMerge(
      TrainJob("mlx", "mlx-distributed", json::parse(R"({"numNodes": 1, "numProcPerNode": 2})")),
      Runtime("mlx_distributed.yaml"));
  EXPECT_EQ(Job(m, "node")["template"]["spec"]["parallelism"], 1);  // max(numNodes - 1, 1)
  EXPECT_EQ(Env(Container(m, "launcher", "node"), "OMPI_MCA_orte_set_default_slots")["value"], "2");
}

TEST(MergeRuntimeTest, JaxEnv) {
  MergedTrainJob m =
      MustMerge(TrainJob("jx", "jax-distributed",
                         json::parse(R"({"numNodes": 2, "env": [{"name": "A", "value": "1"}]})")),
                Runtime("jax_distributed.yaml"));
  json node = Container(m, "node", "node");
  EXPECT_EQ(EnvNames(node), (std::vector<std::string>{"JAX_NUM_PROCESSES", "JAX_PROCESS_ID",
                                                      "JAX_COORDINATOR_ADDRESS", "A"}));
  EXPECT_EQ(Env(node, "JAX_NUM_PROCESSES")["value"], "2");
  EXPECT_EQ(Env(node, "JAX_PROCESS_ID")["valueFrom"], CompletionIndexRef());
  EXPECT_EQ(Env(node, "JAX_COORDINATOR_ADDRESS")["value"], "jx-node-0-0.jx:29500");
  EXPECT_EQ(node["ports"][0]["containerPort"], 29500);
}

TEST(MergeRuntimeTest, XgboostEnvCountsGpuWorkers) {
  MergedTrainJob m = MustMerge(
      TrainJob(
          "xg", "xgboost-distributed",
          json::parse(R"({"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}})")),
      Runtime("xgboost_distributed.yaml"));
  json node = Container(m, "node", "node");
  EXPECT_EQ(Env(node, "DMLC_TRACKER_URI")["value"], "xg-node-0-0.xg");
  EXPECT_EQ(Env(node, "DMLC_TRACKER_PORT")["value"], "29500");
  EXPECT_EQ(Env(node, "DMLC_TASK_ID")["valueFrom"], CompletionIndexRef());
  EXPECT_EQ(Env(node, "DMLC_NUM_WORKER")["value"], "6");
  EXPECT_EQ(Job(m, "node")["template"]["spec"]["parallelism"], 3);
}

// torchtune: `tune run` extended with the rendezvous, recipe, config and the runtime's paths.
TEST(MergeRuntimeTest, TorchTuneCommand) {
  json llama = Runtime("torchtune/llama3_2/llama3_2_1B.yaml");
  MergedTrainJob m = MustMerge(
      TrainJob("tt", "torchtune-llama3.2-1b", json::parse(R"({"command": ["tune", "run"]})")),
      llama);
  json node = Container(m, "node", "node");
  EXPECT_EQ(node["command"], json::parse(R"(["tune", "run", "--rdzv_endpoint=tt-node-0-0.tt:29500",
      "full_finetune_distributed", "--config", "llama3_2/1B_full", "output_dir=/workspace/output",
      "tokenizer.path=/workspace/model/original/tokenizer.model",
      "checkpointer.checkpoint_dir=/workspace/model"])"));
  EXPECT_EQ(EnvNames(node),
            (std::vector<std::string>{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK"}));
  EXPECT_EQ(Env(node, "PET_NPROC_PER_NODE")["value"], "auto");

  json qwen = Runtime("torchtune/qwen2_5/qwen2_5_1.5B.yaml");
  m = MustMerge(
      TrainJob(
          "tq", "torchtune-qwen2.5-1.5b",
          json::parse(R"({"command": ["tune", "run"], "args": ["model.lora_attn_modules=[q_proj]"],
                                         "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}})")),
      qwen);
  node = Container(m, "node", "node");
  EXPECT_EQ(node["command"], json::parse(R"(["tune", "run", "lora_finetune_single_device",
      "--config", "qwen2_5/1.5B_lora_single_device", "output_dir=/workspace/output",
      "tokenizer.path=/workspace/model/vocab.json", "tokenizer.merges_file=/workspace/model/merges.txt",
      "checkpointer.checkpoint_dir=/workspace/model"])"));
  EXPECT_EQ(node["args"][0], "model.lora_attn_modules=[q_proj]");
}

TEST(MergeRuntimeTest, InitializersTakeStorageUriEnvAndSecret) {
  json train_job =
      TrainJob("tt", "torchtune-llama3.2-3b", json::parse(R"({"command": ["tune", "run"]})"));
  train_job["spec"]["initializer"] = json::parse(R"({
      "dataset": {"storageUri": "hf://mine/data", "env": [{"name": "X", "value": "1"}]},
      "model": {"secretRef": {"name": "hf-token"}}})");
  MergedTrainJob m = MustMerge(train_job, Runtime("torchtune/llama3_2/llama3_2_3B.yaml"));
  json dataset = Container(m, "dataset-initializer", "dataset-initializer");
  EXPECT_EQ(dataset["env"], json::parse(R"([{"name": "STORAGE_URI", "value": "hf://mine/data"},
                                            {"name": "X", "value": "1"}])"));
  json model = Container(m, "model-initializer", "model-initializer");
  EXPECT_EQ(Env(model, "STORAGE_URI")["value"], "hf://meta-llama/Llama-3.2-3B-Instruct");
  EXPECT_EQ(model["envFrom"], json::parse(R"([{"secretRef": {"name": "hf-token"}}])"));
  const json& jobs = m.job_set["spec"]["replicatedJobs"];
  EXPECT_EQ(jobs[0]["name"], "dataset-initializer");
  EXPECT_EQ(jobs[1]["name"], "model-initializer");
  EXPECT_EQ(jobs[2]["name"], "node");
}

TEST(MergeRuntimeTest, PatchesMergeByNameAndKeepJobOrder) {
  json runtime = Load("examples/yaml/05-multi-step.yaml", "TrainingRuntime");
  json train_job = Load("examples/yaml/05-multi-step.yaml", "TrainJob");
  train_job["spec"]["runtimePatches"] = json::parse(R"([
      {"manager": "a.io/x", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
          {"name": "node", "template": {"spec": {"template": {"spec": {
              "containers": [{"name": "node", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}}}}},
          {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": {
              "containers": [{"name": "dataset-initializer", "env": [{"name": "E", "value": "1"}]}]}}}}}]}}}},
      {"manager": "b.io/y", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
          {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": {
              "containers": [{"name": "dataset-initializer", "env": [{"name": "E", "value": "2"}]}]}}}}}]}}}}])");
  MergedTrainJob m = MustMerge(train_job, runtime);
  const json& jobs = m.job_set["spec"]["replicatedJobs"];
  EXPECT_EQ(jobs[0]["name"], "dataset-initializer");
  EXPECT_EQ(Container(m, "node", "node")["volumeMounts"][0]["mountPath"], "/v");
  EXPECT_EQ(Container(m, "node", "node")["image"],
            "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime");
  json init = Container(m, "dataset-initializer", "dataset-initializer");
  EXPECT_EQ(Env(init, "E")["value"], "2");
  EXPECT_EQ(Env(init, "STORAGE_URI")["value"], "hf://tatsu-lab/alpaca");
}

// Upstream's patch types hold a few pod and container fields; its CRD prunes the rest, so a
// patched scheduler or image never reaches upstream's merge, and must not reach coach's.
TEST(MergeRuntimeTest, PatchesCarryOnlyUpstreamsPatchFields) {
  json runtime = Load("runtimes/torch_distributed.yaml", "ClusterTrainingRuntime");
  json train_job = Load("examples/yaml/01-multi-node.yaml", "TrainJob");
  train_job["spec"]["runtimePatches"] = json::parse(R"([
      {"manager": "a.io/x", "trainingRuntimeSpec": {"template": {"spec": {
          "network": {"subdomain": "other"},
          "replicatedJobs": [{"name": "node", "replicas": 3, "template": {
              "spec": {"parallelism": 7, "template": {"spec": {
                  "schedulerName": "other-scheduler", "priorityClassName": "high",
                  "nodeSelector": {"pool": "gpu"},
                  "containers": [{"name": "node", "image": "other:1",
                                  "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]}}}}}]}}}}])");
  MergedTrainJob m = MustMerge(train_job, runtime);
  const json& node = m.job_set["spec"]["replicatedJobs"][0];
  const json& pod = node["template"]["spec"]["template"]["spec"];
  EXPECT_FALSE(pod.contains("schedulerName")) << pod.dump();
  EXPECT_FALSE(pod.contains("priorityClassName")) << pod.dump();
  EXPECT_EQ(pod["nodeSelector"], json::parse(R"({"pool": "gpu"})"));
  EXPECT_EQ(Container(m, "node", "node")["volumeMounts"][0]["mountPath"], "/v");
  EXPECT_NE(Container(m, "node", "node")["image"], "other:1");
  EXPECT_EQ(node.value("replicas", 1), 1);
  EXPECT_NE(node["template"]["spec"].value("parallelism", 0), 7);
  EXPECT_FALSE(m.job_set["spec"].contains("network") &&
               m.job_set["spec"]["network"].value("subdomain", "") == "other");
}

TEST(MergeRuntimeTest, ErrorsNameTheField) {
  struct Case {
    const char* scenario;
    std::function<void(json& train_job, json& runtime)> edit;
    const char* want;
  };
  const Case cases[] = {
      {"no trainer job",
       [](json&, json& r) {
         r["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["metadata"]["labels"] =
             json::object();
       },
       "spec.template.spec.replicatedJobs: no job"},
      {"patch names a missing job",
       [](json& t, json&) {
         t["spec"]["runtimePatches"] = json::parse(R"([{"manager": "a.io/b", "trainingRuntimeSpec":
             {"template": {"spec": {"replicatedJobs": [{"name": "worker"}]}}}}])");
       },
       "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name: the "
       "runtime has no replicatedJobs element named \"worker\""},
      {"patch names a missing container",
       [](json& t, json&) {
         t["spec"]["runtimePatches"] = json::parse(R"([{"manager": "a.io/b", "trainingRuntimeSpec":
             {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template":
             {"spec": {"containers": [{"name": "sidecar", "image": "x"}]}}}}}]}}}}])");
       },
       "replicatedJobs[0].template.spec.template.spec.containers[0].name: the runtime has no "
       "containers element named \"sidecar\""},
      {"patch directive",
       [](json& t, json&) {
         t["spec"]["runtimePatches"] = json::parse(R"([{"manager": "a.io/b", "trainingRuntimeSpec":
             {"template": {"spec": {"$patch": "replace"}}}}])");
       },
       "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.$patch: strategic merge "
       "directives are not supported"},
      {"bad quantity",
       [](json& t, json&) { t["spec"]["trainer"]["resourcesPerNode"]["requests"]["cpu"] = "two"; },
       "spec.trainer.resourcesPerNode.requests.cpu: not a quantity"},
      {"runtime not the one named",
       [](json& t, json&) { t["spec"]["runtimeRef"]["name"] = "other"; },
       "spec.runtimeRef.name: \"other\" but the runtime given is \"torch-distributed\""},
      {"runtime kind", [](json& t, json&) { t["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"; },
       "spec.runtimeRef.kind: names a TrainingRuntime"},
      {"numNodes zero", [](json& t, json&) { t["spec"]["trainer"]["numNodes"] = 0; },
       "spec.trainer.numNodes: must be a positive"},
      {"name not a DNS label", [](json& t, json&) { t["metadata"]["name"] = "Bad_Name"; },
       "metadata.name: must be an RFC 1035 label"},
      {"env without name",
       [](json& t, json&) { t["spec"]["trainer"]["env"] = json::parse(R"([{"value": "x"}])"); },
       "spec.trainer.env[0].name: required"},
      {"two frameworks", [](json&, json& r) { r["spec"]["mlPolicy"]["jax"] = json::object(); },
       "spec.mlPolicy: Only one of the policy can be configured"},
      {"envInjection target missing",
       [](json&, json& r) {
         r["spec"]["mlPolicy"]["torch"]["envInjection"] =
             json::parse(R"({"targets": [{"jobName": "node", "containerNames": ["check"]}]})");
       },
       "spec.mlPolicy.torch.envInjection.targets[0].containerNames[0]: job \"node\" has no "
       "container \"check\""},
  };
  for (const Case& c : cases) {
    json train_job = TrainJob("t", "torch-distributed", json::parse(R"({"numNodes": 1})"));
    json runtime = Runtime("torch_distributed.yaml");
    c.edit(train_job, runtime);
    absl::StatusOr<MergedTrainJob> m = MergeRuntime(train_job, runtime);
    ASSERT_FALSE(m.ok()) << c.scenario;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << c.scenario;
    EXPECT_THAT(m.status().message(), HasSubstr(c.want)) << c.scenario;
  }
}

// A job author's patch may give any field any type: the merge and the pods it becomes answer
// InvalidArgument, never throw.
TEST(MergeRuntimeTest, PatchesOfTheWrongTypeAreRefusedNotThrown) {
  const char* containers[] = {
      R"({"name": "node", "volumeMounts": "x"})", R"({"name": "node", "env": 5})",
      R"({"name": "node", "resources": []})",     R"({"name": "node", "ports": [7]})",
      R"({"name": "node", "command": {"a": 1}})",
  };
  for (const char* container : containers) {
    json train_job = TrainJob("t", "torch-distributed", json::parse(R"({"numNodes": 2})"));
    train_job["spec"]["runtimePatches"] = json::array({json::parse(
        absl::StrCat(R"({"manager": "a.io/b", "trainingRuntimeSpec": {"template": {"spec":
            {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec":
            {"containers": [)",
                     container, "]}}}}}]}}}}"))});
    absl::StatusOr<MergedTrainJob> m;
    ASSERT_NO_THROW(m = MergeRuntime(train_job, Runtime("torch_distributed.yaml"))) << container;
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << container;
      continue;
    }
    absl::StatusOr<RealizedTrainJob> r;
    ASSERT_NO_THROW(r = RealizeTrainJob(train_job, *m, ClusterFacts())) << container;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << container;
    }
  }
}

}  // namespace
}  // namespace coach::trainer
