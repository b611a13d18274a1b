#include "operator/trainer/admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/trainer/reference_data.h"

namespace coach::trainer::admission {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kPolicyUrl[] =
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
    "#runtime-deprecation-policy";

json Load(const std::string& path, const std::string& kind) {
  absl::StatusOr<json> doc = testing::LoadReferenceKind(path, kind);
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? *doc : json::object();
}

json Runtime(const std::string& path) { return Load("runtimes/" + path, "ClusterTrainingRuntime"); }

const std::vector<std::string>& ShippedRuntimes() {
  static const auto* files =
      new std::vector<std::string>{"torch_distributed.yaml",
                                   "deepspeed_distributed.yaml",
                                   "mlx_distributed.yaml",
                                   "jax_distributed.yaml",
                                   "xgboost_distributed.yaml",
                                   "torchtune/llama3_2/llama3_2_1B.yaml",
                                   "torchtune/llama3_2/llama3_2_3B.yaml",
                                   "torchtune/qwen2_5/qwen2_5_1.5B.yaml",
                                   "data-cache/torch_distributed_with_cache.yaml"};
  return *files;
}

// A TrainJob on ClusterTrainingRuntime `runtime` with spec.trainer `trainer` (when not null).
json TrainJob(const std::string& runtime, json trainer = json()) {
  json j = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
            {"kind", "TrainJob"},
            {"metadata", {{"name", "job"}}},
            {"spec", {{"runtimeRef", {{"name", runtime}}}}}};
  if (!trainer.is_null()) j["spec"]["trainer"] = std::move(trainer);
  return testing::WithDefaults(j);
}

Result MustValidate(const json& job, const json* runtime, const json* old = nullptr) {
  absl::StatusOr<Result> r = ValidateTrainJob(job, runtime, old);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Result{};
}

// The aggregated message for `job` on `runtime`.
std::string Denial(const json& job, const json& runtime, const json* old = nullptr) {
  return MustValidate(job, &runtime, old).Message();
}

json Patch(const std::string& manager, json replicated_jobs) {
  return {
      {"manager", manager},
      {"trainingRuntimeSpec", {{"template", {{"spec", {{"replicatedJobs", replicated_jobs}}}}}}}};
}

json PodPatch(const std::string& job, json pod_spec) {
  return json::array(
      {{{"name", job}, {"template", {{"spec", {{"template", {{"spec", pod_spec}}}}}}}}});
}

TEST(ValidateTrainingRuntimeTest, ShippedRuntimesAccepted) {
  for (const std::string& file : ShippedRuntimes()) {
    const json runtime = Runtime(file);
    absl::StatusOr<Result> r = ValidateTrainingRuntime(runtime, nullptr);
    ASSERT_TRUE(r.ok()) << file << ": " << r.status();
    EXPECT_TRUE(r->allowed()) << file << ": " << r->Message();
    EXPECT_TRUE(r->warnings.empty()) << file;
  }
  for (const auto& [file, kind] : std::vector<std::pair<std::string, std::string>>{
           {"examples/yaml/04-volcano-integration.yaml", "ClusterTrainingRuntime"},
           {"examples/yaml/05-multi-step.yaml", "TrainingRuntime"},
           {"examples/flux/flux-runtime.yaml", "ClusterTrainingRuntime"}}) {
    absl::StatusOr<Result> r = ValidateTrainingRuntime(Load(file, kind), nullptr);
    ASSERT_TRUE(r.ok()) << file << ": " << r.status();
    EXPECT_TRUE(r->allowed()) << file << ": " << r->Message();
  }
}

TEST(ValidateTrainingRuntimeTest, AncestorJobNeedsOneReplicaAndItsContainer) {
  json runtime = Runtime("torch_distributed.yaml");
  json& node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0];
  node["replicas"] = 2;
  node["template"]["spec"]["template"]["spec"]["containers"] = {{{"name", "trainer"}}};
  absl::StatusOr<Result> r = ValidateTrainingRuntime(runtime, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->Message(),
            "[spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1, "
            "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid "
            "value: [{\"name\":\"trainer\"}]: must contain the required container for the "
            "ancestor: trainer]");

  // An initContainer of the required name does not count.
  json init = Runtime("torch_distributed.yaml");
  json& pod =
      init["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  pod["initContainers"] = pod["containers"];
  pod["containers"] = {{{"name", "other"}}};
  r = ValidateTrainingRuntime(init, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->Message(), HasSubstr("must contain the required container for the ancestor: "
                                      "trainer"));
}

TEST(ValidateTrainingRuntimeTest, DisabledLabelAndUpdates) {
  json bad = Runtime("torch_distributed.yaml");
  bad["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 3;
  json disabled = bad;
  disabled["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] = "disabled";
  EXPECT_TRUE(ValidateTrainingRuntime(disabled, nullptr)->allowed());
  EXPECT_TRUE(ValidateTrainingRuntime(disabled, &disabled)->allowed());
  // The objectSelector matches an update when the old object lacks the label.
  EXPECT_FALSE(ValidateTrainingRuntime(disabled, &bad)->allowed());

  EXPECT_FALSE(ValidateTrainingRuntime(bad, &bad)->allowed());  // cluster runtimes: on update too
  json namespaced = bad;
  namespaced["kind"] = "TrainingRuntime";
  EXPECT_FALSE(ValidateTrainingRuntime(namespaced, nullptr)->allowed());
  EXPECT_TRUE(ValidateTrainingRuntime(namespaced, &namespaced)->allowed());
}

TEST(ValidateTrainingRuntimeTest, DeprecatedClusterRuntimeWarnsOnCreate) {
  json runtime = Runtime("torch_distributed.yaml");
  runtime["metadata"]["labels"]["trainer.kubeflow.org/support"] = "deprecated";
  absl::StatusOr<Result> r = ValidateTrainingRuntime(runtime, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->allowed());
  EXPECT_THAT(r->warnings,
              ElementsAre(std::string("ClusterTrainingRuntime \"torch-distributed\" is deprecated "
                                      "and will be removed in a future release of Kubeflow "
                                      "Trainer. See runtime deprecation policy: ") +
                          kPolicyUrl));
  EXPECT_TRUE(ValidateTrainingRuntime(runtime, &runtime)->warnings.empty());
}

TEST(ValidateTrainJobTest, ExamplesAccepted) {
  const json torch = Runtime("torch_distributed.yaml");
  for (const std::string file :
       {"01-multi-node.yaml", "02-runtime-patches.yaml", "03-kueue-integration.yaml"}) {
    absl::StatusOr<json> job =
        DefaultTrainJob(Load("examples/yaml/" + file, "TrainJob"), nullptr, absl::Now());
    ASSERT_TRUE(job.ok()) << file << ": " << job.status();
    const Result r = MustValidate(*job, &torch);
    EXPECT_TRUE(r.allowed()) << file << ": " << r.Message();
  }
  const json volcano = Load("examples/yaml/04-volcano-integration.yaml", "ClusterTrainingRuntime");
  const Result r =
      MustValidate(Load("examples/yaml/04-volcano-integration.yaml", "TrainJob"), &volcano);
  EXPECT_TRUE(r.allowed()) << r.Message();
  const json flux = Load("examples/flux/flux-runtime.yaml", "ClusterTrainingRuntime");
  for (const std::string file :
       {"flux-interactive.yaml", "lammps-train-job.yaml", "lammps-train-gpus.yaml"}) {
    const Result f = MustValidate(Load("examples/flux/" + file, "TrainJob"), &flux);
    EXPECT_TRUE(f.allowed()) << file << ": " << f.Message();
  }
}

// Upstream's own example 05 mounts no `initializer` volume in its dataset-initializer, and
// upstream v2.3.0's webhook refuses it for that.
TEST(ValidateTrainJobTest, MultiStepExampleRefusedAsUpstream) {
  const std::string file = "examples/yaml/05-multi-step.yaml";
  const json runtime = Load(file, "TrainingRuntime");
  EXPECT_EQ(Denial(Load(file, "TrainJob"), runtime),
            "spec.runtimeRef: Invalid value: "
            "{\"name\":\"torch-with-dataset-init\",\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":"
            "\"TrainingRuntime\"}: must have volumeMount with name - initializer in container "
            "dataset-initializer of the dataset-initializer job");
  json mounted = runtime;
  mounted["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
         ["containers"][0]["volumeMounts"] = {
             {{"name", "initializer"}, {"mountPath", "/workspace"}}};
  EXPECT_TRUE(MustValidate(Load(file, "TrainJob"), &mounted).allowed());
}

TEST(ValidateTrainJobTest, EveryShippedRuntimeTakesAPlainJob) {
  for (const std::string& file : ShippedRuntimes()) {
    const json runtime = Runtime(file);
    json job = TrainJob(runtime["metadata"]["name"], {{"numNodes", 1}});
    const Result r = MustValidate(job, &runtime);
    EXPECT_TRUE(r.allowed()) << file << ": " << r.Message();
  }
}

TEST(ValidateTrainJobTest, UnsupportedRuntime) {
  json job = TrainJob("torch-distributed");
  job["spec"]["runtimeRef"]["kind"] = "Runtime";
  EXPECT_EQ(MustValidate(job, nullptr).Message(),
            "unsupported runtime: Runtime.trainer.kubeflow.org");
  job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime";
  job["spec"]["runtimeRef"]["apiGroup"] = "example.com";
  EXPECT_EQ(MustValidate(job, nullptr).Message(),
            "unsupported runtime: TrainingRuntime.example.com");
}

TEST(ValidateTrainJobTest, MissingRuntime) {
  json job = TrainJob("nope");
  EXPECT_EQ(
      MustValidate(job, nullptr).Message(),
      "spec.RuntimeRef: Invalid value: "
      "{\"name\":\"nope\",\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":"
      "\"ClusterTrainingRuntime\"}: clustertrainingruntimes.trainer.kubeflow.org \"nope\" not "
      "found: specified clusterTrainingRuntime must be created before the TrainJob is created");
  job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime";
  EXPECT_EQ(
      MustValidate(job, nullptr).Message(),
      "spec.runtimeRef: Invalid value: "
      "{\"name\":\"nope\",\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":\"TrainingRuntime\"}: "
      "trainingruntimes.trainer.kubeflow.org \"nope\" not found: specified trainingRuntime "
      "must be created before the TrainJob is created");
}

TEST(ValidateTrainJobTest, InitializerRules) {
  const json torch = Runtime("torch_distributed.yaml");
  json job = TrainJob("torch-distributed");
  job["spec"]["initializer"]["model"] = {{"storageUri", "hf://m"}};
  const std::string ref =
      "spec.runtimeRef: Invalid value: {\"name\":\"torch-distributed\",\"apiGroup\":\"trainer."
      "kubeflow.org\",\"kind\":\"ClusterTrainingRuntime\"}: ";
  EXPECT_EQ(Denial(job, torch),
            ref +
                "must have model-initializer job when trainJob is configured with input "
                "modelConfig");
  job["spec"]["initializer"]["dataset"] = json::object();
  EXPECT_EQ(Denial(job, torch),
            "[" + ref +
                "must have dataset-initializer job when trainJob is configured with input "
                "datasetConfig, " +
                ref +
                "must have model-initializer job when trainJob is configured with input "
                "modelConfig]");

  json runtime = torch;
  json init_job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0];
  init_job["name"] = "model-initializer";
  init_job["template"]["spec"]["template"]["spec"]["containers"] = {{{"name", "loader"}}};
  runtime["spec"]["template"]["spec"]["replicatedJobs"].push_back(init_job);
  job["spec"].erase("initializer");
  job["spec"]["initializer"]["model"] = json::object();
  EXPECT_EQ(Denial(job, runtime),
            ref + "must have container with name - model-initializer in the model-initializer job");
}

TEST(ValidateTrainJobTest, PatchManagerMustBeDomainPrefixedPath) {
  const json torch = Runtime("torch_distributed.yaml");
  json job = TrainJob("torch-distributed");
  job["spec"]["runtimePatches"] = {{{"manager", "kubeflow"}}};
  EXPECT_EQ(Denial(job, torch),
            "spec.runtimePatches.manager: Invalid value: \"kubeflow\": must be a domain-prefixed "
            "path (such as \"acme.io/foo\")");
  job["spec"]["runtimePatches"] = {{{"manager", "Example.com/a b"}}};
  EXPECT_EQ(Denial(job, torch),
            "[spec.runtimePatches.manager: Invalid value: \"Example.com\": a lowercase RFC 1123 "
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), "
            "spec.runtimePatches.manager: Invalid value: \"a b\": Invalid path (regex used for "
            "validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')]");
  job["spec"]["runtimePatches"] = {{{"manager", ""}}};
  EXPECT_EQ(Denial(job, torch), "spec.runtimePatches.manager: Required value");
  job["spec"]["runtimePatches"] = {{{"manager", "kueue.x-k8s.io/manager"}}};
  EXPECT_TRUE(MustValidate(job, &torch).allowed());
}

TEST(ValidateTrainJobTest, PatchesMustNameWhatTheRuntimeHas) {
  const json torch = Runtime("torch_distributed.yaml");
  json job = TrainJob("torch-distributed");
  job["spec"]["runtimePatches"] = {Patch("x.io/a", {{{"name", "worker"}}})};
  const std::string value =
      "spec.runtimePatches: Invalid value: [{\"manager\":\"x.io/a\",\"trainingRuntimeSpec\":{"
      "\"template\":{\"spec\":{\"replicatedJobs\":[{\"name\":\"worker\"}]}}}}]: ";
  EXPECT_EQ(Denial(job, torch),
            value + "must not have replicated job that doesn't exist in the runtime job template");

  job["spec"]["runtimePatches"] = {
      Patch("x.io/a", PodPatch("node", {{"containers", {{{"name", "sidecar"}}}}}))};
  EXPECT_THAT(Denial(job, torch),
              HasSubstr(": must not have container that doesn't exist in the runtime job node"));
  job["spec"]["runtimePatches"] = {
      Patch("x.io/a", PodPatch("node", {{"initContainers", {{{"name", "setup"}}}}}))};
  EXPECT_THAT(
      Denial(job, torch),
      HasSubstr(": must not have initContainer that doesn't exist in the runtime job node"));
  job["spec"]["runtimePatches"] = {
      Patch("x.io/a",
            PodPatch("node", {{"containers", {{{"name", "node"}, {"env", {{{"name", "A"}}}}}}}}))};
  EXPECT_THAT(Denial(job, torch),
              HasSubstr(": must not have envs for the dataset-initializer, model-initializer, node "
                        "containers"));
  job["spec"]["runtimePatches"] = {Patch(
      "x.io/a", PodPatch("node", {{"containers", {{{"name", "node"}, {"image", "other"}}}}}))};
  EXPECT_TRUE(MustValidate(job, &torch).allowed());
}

TEST(ValidateTrainJobTest, PatchesChangeOnlyWhileSuspended) {
  const json torch = Runtime("torch_distributed.yaml");
  json old = TrainJob("torch-distributed");
  old["spec"]["runtimePatches"] = {{{"manager", "x.io/a"}, {"time", "2025-01-01T00:00:00Z"}}};
  json changed = old;
  changed["spec"]["runtimePatches"][0]["trainingRuntimeSpec"] = {
      {"template", {{"metadata", {{"labels", {{"a", "b"}}}}}}}};
  EXPECT_EQ(Denial(changed, torch, &old),
            "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob "
            "is suspended before or after the update");
  json suspending = changed;
  suspending["spec"]["suspend"] = true;
  EXPECT_TRUE(MustValidate(suspending, &torch, &old).allowed());
  json old_suspended = old;
  old_suspended["spec"]["suspend"] = true;
  EXPECT_TRUE(MustValidate(changed, &torch, &old_suspended).allowed());
  // Unchanged patches (an empty list is no list) pass while running.
  json no_patches = TrainJob("torch-distributed");
  json empty_patches = no_patches;
  empty_patches["spec"]["runtimePatches"] = json::array();
  EXPECT_TRUE(MustValidate(old, &torch, &old).allowed());
  EXPECT_TRUE(MustValidate(empty_patches, &torch, &no_patches).allowed());
  EXPECT_FALSE(MustValidate(no_patches, &torch, &old).allowed());
}

TEST(ValidateTrainJobTest, TorchReservedEnvAndEnvInjection) {
  json torch = Runtime("torch_distributed.yaml");
  json job = TrainJob("torch-distributed", {{"env",
                                             {{{"name", "PET_NNODES"}, {"value", "2"}},
                                              {{"name", "OK"}},
                                              {{"name", "PET_MASTER_ADDR"}, {"value", "<h>"}}}}});
  EXPECT_EQ(Denial(job, torch),
            "spec.trainer.env: Invalid value: [{\"name\":\"PET_NNODES\",\"value\":\"2\"},{\"name\":"
            "\"OK\"},{\"name\":\"PET_MASTER_ADDR\",\"value\":\"\\u003ch\\u003e\"}]: must not have "
            "reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_NNODES]");

  torch["spec"]["mlPolicy"]["torch"]["envInjection"]["targets"] = {
      {{"jobName", "node"}, {"containerNames", {"node", "sidecar"}}}};
  EXPECT_EQ(Denial(TrainJob("torch-distributed"), torch),
            "spec.runtimeRef: Invalid value: {\"jobName\":\"node\",\"containerNames\":[\"node\","
            "\"sidecar\"]}: envInjection target podSet \"node\" container \"sidecar\" not found in "
            "runtime template");
}

TEST(ValidateTrainJobTest, MpiRules) {
  json deepspeed = Runtime("deepspeed_distributed.yaml");
  json job = TrainJob("deepspeed-distributed",
                      {{"numNodes", 2}, {"env", {{{"name", "OMPI_MCA_plm_rsh_args"}}}}});
  EXPECT_EQ(
      Denial(job, deepspeed),
      "spec.trainer.env: Invalid value: [{\"name\":\"OMPI_MCA_plm_rsh_args\"}]: must not have "
      "reserved envs, invalid envs configured: [OMPI_MCA_plm_rsh_args]");
  json no_launcher = deepspeed;
  json& jobs = no_launcher["spec"]["template"]["spec"]["replicatedJobs"];
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i]["name"] == "launcher") jobs.erase(i--);
  }
  job["spec"]["trainer"].erase("env");
  EXPECT_EQ(Denial(job, no_launcher),
            "spec.trainer.numNodes: Invalid value: 2: must have 1 when MPI trainingRuntime with "
            "enabled runLauncherAsNode does not have either launcher and node");
  job["spec"]["trainer"]["numNodes"] = 1;
  EXPECT_TRUE(MustValidate(job, &no_launcher).allowed());
}

TEST(ValidateTrainJobTest, XgboostReservedEnvForbidden) {
  const json xgb = Runtime("xgboost_distributed.yaml");
  json job = TrainJob(
      "xgboost-distributed",
      {{"env", {{{"name", "A"}}, {{"name", "DMLC_TASK_ID"}}, {{"name", "DMLC_NUM_WORKER"}}}}});
  EXPECT_EQ(Denial(job, xgb),
            "[spec.trainer.env[1]: Forbidden: DMLC_TASK_ID is reserved for the XGBoost runtime, "
            "spec.trainer.env[2]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime]");
  // Other frameworks' names are not reserved here.
  job["spec"]["trainer"]["env"] = {{{"name", "PET_NNODES"}}};
  EXPECT_TRUE(MustValidate(job, &xgb).allowed());
}

// Coach's own rule: coach.dev/elastic-min-nodes, an integer N with 1 <= N < numNodes, on a
// torch runtime whose trainer job is `node`.
TEST(ValidateTrainJobTest, ElasticMinNodesAnnotation) {
  const json torch = Runtime("torch_distributed.yaml");
  const auto annotated = [](const std::string& runtime, json trainer, const std::string& value) {
    json job = TrainJob(runtime, std::move(trainer));
    job["metadata"]["annotations"]["coach.dev/elastic-min-nodes"] = value;
    return job;
  };
  EXPECT_TRUE(
      MustValidate(annotated("torch-distributed", {{"numNodes", 3}}, "2"), &torch).allowed());
  EXPECT_TRUE(
      MustValidate(annotated("torch-distributed", {{"numNodes", 2}}, "1"), &torch).allowed());
  EXPECT_EQ(Denial(annotated("torch-distributed", {{"numNodes", 3}}, "3"), torch),
            "metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: \"3\": must be an "
            "integer N with 1 <= N < numNodes (numNodes is 3)");
  EXPECT_EQ(Denial(annotated("torch-distributed", {{"numNodes", 3}}, "many"), torch),
            "metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: \"many\": must be "
            "an integer N with 1 <= N < numNodes (numNodes is 3)");
  // Without spec.trainer.numNodes the runtime's numNodes (1) counts.
  EXPECT_EQ(Denial(annotated("torch-distributed", json(), "1"), torch),
            "metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: \"1\": must be an "
            "integer N with 1 <= N < numNodes (numNodes is 1)");
  json wide = torch;
  wide["spec"]["mlPolicy"]["numNodes"] = 4;
  EXPECT_TRUE(MustValidate(annotated("torch-distributed", json(), "3"), &wide).allowed());
  EXPECT_EQ(
      Denial(annotated("jax-distributed", {{"numNodes", 3}}, "2"), Runtime("jax_distributed.yaml")),
      "metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: \"2\": elastic "
      "training is torchrun's: the runtime needs mlPolicy.torch");
  json renamed = torch;
  renamed["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "trainer";
  EXPECT_EQ(Denial(annotated("torch-distributed", {{"numNodes", 3}}, "2"), renamed),
            "metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: \"2\": the "
            "runtime's trainer job must be named \"node\", not \"trainer\"");
}

TEST(ValidateTrainJobTest, DeprecatedClusterRuntimeWarns) {
  json torch = Runtime("torch_distributed.yaml");
  torch["metadata"]["labels"]["trainer.kubeflow.org/support"] = "deprecated";
  const Result r = MustValidate(TrainJob("torch-distributed"), &torch);
  EXPECT_TRUE(r.allowed());
  EXPECT_THAT(r.warnings, ElementsAre(std::string("Referenced ClusterTrainingRuntime "
                                                  "\"torch-distributed\" is deprecated and will be "
                                                  "removed in a future release of Kubeflow "
                                                  "Trainer. See runtime deprecation policy: ") +
                                      kPolicyUrl));
}

TEST(DefaultTrainJobTest, CreateAndUpdate) {
  const absl::Time t1 = absl::FromUnixSeconds(1735689600);  // 2025-01-01T00:00:00Z
  const absl::Time t2 = t1 + absl::Hours(1);
  json job = TrainJob("torch-distributed");
  job["spec"]["runtimePatches"] = {{{"manager", "x.io/a"}},
                                   {{"manager", "x.io/b"}, {"time", "2020-01-01T00:00:00Z"}}};
  absl::StatusOr<json> created = DefaultTrainJob(job, nullptr, t1);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["spec"]["runtimePatches"][0]["time"], "2025-01-01T00:00:00Z");
  EXPECT_EQ((*created)["spec"]["runtimePatches"][1]["time"], "2020-01-01T00:00:00Z");

  json update = *created;
  update["spec"]["runtimePatches"][0].erase("time");  // unchanged apart from the time
  update["spec"]["runtimePatches"][1]["trainingRuntimeSpec"] = {
      {"template", {{"metadata", {{"labels", {{"a", "b"}}}}}}}};
  update["spec"]["runtimePatches"].push_back({{"manager", "x.io/c"}});
  absl::StatusOr<json> updated = DefaultTrainJob(update, &*created, t2);
  ASSERT_TRUE(updated.ok()) << updated.status();
  const json& p = (*updated)["spec"]["runtimePatches"];
  EXPECT_EQ(p[0]["time"], "2025-01-01T00:00:00Z");
  EXPECT_EQ(p[1]["time"], "2025-01-01T01:00:00Z");
  EXPECT_EQ(p[2]["time"], "2025-01-01T01:00:00Z");

  json none = TrainJob("torch-distributed");
  EXPECT_EQ(*DefaultTrainJob(none, &none, t1), none);
}

// Every member of the example TrainJob and its runtime, in turn, given each wrong JSON type:
// each function answers (InvalidArgument or a verdict) and none throws.
TEST(AdmissionHostileTest, WrongTypesAnywhereNeverThrow) {
  const json runtime = Runtime("deepspeed_distributed.yaml");
  json job = Load("examples/yaml/02-runtime-patches.yaml", "TrainJob");
  job["spec"]["runtimeRef"]["name"] = "deepspeed-distributed";
  job["spec"]["initializer"]["dataset"]["env"] = {{{"name", "A"}}};
  const std::vector<json> wrong = {json(7),        json("s"),  json::array({1}),
                                   json::object(), json(true), json(nullptr)};
  int refused = 0;
  auto sweep = [&](const json& doc, auto&& check) {
    const json flat = doc.flatten();
    std::set<std::string> pointers;
    for (const auto& [ptr, leaf] : flat.items()) {
      // Every ancestor of every leaf, and the leaf.
      for (size_t at = ptr.find('/', 1); at != std::string::npos; at = ptr.find('/', at + 1)) {
        pointers.insert(ptr.substr(0, at));
      }
      pointers.insert(ptr);
    }
    for (const std::string& ptr : pointers) {
      for (const json& w : wrong) {
        json bad = doc;
        bad[json::json_pointer(ptr)] = w;
        check(bad);
      }
    }
  };
  sweep(job, [&](const json& bad) {
    absl::StatusOr<Result> r = ValidateTrainJob(bad, &runtime, &job);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
      ++refused;
    }
    ValidateTrainJob(job, &runtime, &bad).IgnoreError();
    DefaultTrainJob(bad, &job, absl::Now()).IgnoreError();
    DefaultTrainJob(job, &bad, absl::Now()).IgnoreError();
  });
  sweep(runtime, [&](const json& bad) {
    ValidateTrainJob(job, &bad, nullptr).IgnoreError();
    ValidateTrainingRuntime(bad, nullptr).IgnoreError();
    ValidateTrainingRuntime(runtime, &bad).IgnoreError();
  });
  EXPECT_GT(refused, 100);
  for (const json& w : wrong) {
    EXPECT_FALSE(ValidateTrainJob(w, &runtime, nullptr).ok());
    EXPECT_FALSE(ValidateTrainingRuntime(w, nullptr).ok());
    if (!w.is_object()) {
      EXPECT_FALSE(DefaultTrainJob(w, nullptr, absl::Now()).ok());
    }
  }
}

}  // namespace
}  // namespace coach::trainer::admission
