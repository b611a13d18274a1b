// A TrainJob through the one reconciler: its runtime merged and realised into pods (names,
// labels and env as Trainer v2.3 and JobSet give them), initializers before the trainer, and
// upstream's status (no condition while it runs, Complete/Failed in upstream's words, jobsStatus).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/job_conditions.h"
#include "operator/model/testing/result_text.h"
#include "operator/model/testing/train_job_fixtures.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/reconciler.h"
#include "operator/trainer/reference_data.h"

namespace coach::reconcile {
namespace {

using nlohmann::json;
using testing::ActionsText;
using ::testing::ElementsAre;
using testing::EventReasons;
using testing::MakeTrainJob;
using testing::ObservedPodOf;
using testing::ObservedWithRuntime;
using testing::ReferenceRuntime;

// A runtime whose trainer waits for a dataset initializer to complete.
json InitializerRuntime() {
  auto docs = api::v1::codec::ParseYamlDocuments(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: with-data, labels: {trainer.kubeflow.org/framework: torch}}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
          spec:
            template:
              spec:
                containers:
                - name: dataset-initializer
                  image: init:1
                  volumeMounts: [{name: initializer, mountPath: /workspace}]
                volumes: [{name: initializer, emptyDir: {}}]
      - name: node
        dependsOn: [{name: dataset-initializer, status: Complete}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers: [{name: node, image: train:1}]
)");
  EXPECT_TRUE(docs.ok()) << docs.status();
  return docs.ok() ? docs->front() : json();
}

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(TrainJobReconcileTest, RunsAsUpstreamAndCompletesInUpstreamsWords) {
  const model::Job job = MakeTrainJob("torch-distributed", 2);
  model::ObservedState observed = ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml"));
  model::ReconcileResult first = Reconcile(job, observed, kNow, {});
  const std::vector<std::string> actions = ActionsText(first);
  ASSERT_EQ(actions.size(), 4u) << ::testing::PrintToString(actions);
  EXPECT_EQ(actions[0], "create Service/mnist");
  EXPECT_EQ(actions[1], "create ConfigMap/mnist-runtime-snapshot");
  EXPECT_EQ(actions[2].rfind("create Pod/mnist-node-0-0-", 0), 0u) << actions[2];
  EXPECT_EQ(actions[3].rfind("create Pod/mnist-node-0-1-", 0), 0u) << actions[3];
  const json& pod = first.actions[2].object.body;
  EXPECT_EQ(pod["spec"]["hostname"], "mnist-node-0-0");
  EXPECT_EQ(pod["spec"]["subdomain"], "mnist");
  EXPECT_EQ(pod["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"], "mnist");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  json env = json::object();
  for (const json& e : pod["spec"]["containers"][0]["env"]) env[e["name"].get<std::string>()] = e;
  EXPECT_EQ(env["PET_NNODES"]["value"], "2");
  EXPECT_EQ(env["PET_MASTER_ADDR"]["value"], "mnist-node-0-0.mnist");
  EXPECT_NE(first.actions[1].object.body["data"]["runtime"].get<std::string>().find(
                "name: torch-distributed"),
            std::string::npos);

  model::Job running = job;
  *running.mutable_status() = first.status;
  observed.runtime_from_snapshot = true;
  observed.objects = {{"Service", "mnist"}, {"ConfigMap", "mnist-runtime-snapshot"}};
  observed.pods = {ObservedPodOf(first.actions[2].object, model::PodPhase::kRunning),
                   ObservedPodOf(first.actions[3].object, model::PodPhase::kRunning)};
  model::ReconcileResult second = Reconcile(running, observed, kNow + absl::Seconds(5), {});
  EXPECT_TRUE(ActionsText(second).empty()) << ::testing::PrintToString(ActionsText(second));
  *running.mutable_status() = second.status;
  const json shown = api::v1::codec::JobToJson(running);
  // Upstream readers (the Kubeflow SDK) see a running job: no condition at all.
  EXPECT_FALSE(shown["status"].contains("conditions")) << shown["status"].dump();
  EXPECT_EQ(shown["status"]["coach"]["conditions"].back()["type"], "Running");
  EXPECT_EQ(shown["status"]["jobsStatus"],
            json::parse(R"([{"name":"node","ready":1,"succeeded":0,"failed":0,"active":1,
                             "suspended":0}])"));

  for (model::ObservedPod& p : observed.pods) p.phase = model::PodPhase::kSucceeded;
  model::ReconcileResult third = Reconcile(running, observed, kNow + absl::Seconds(9), {});
  *running.mutable_status() = third.status;
  const json done = api::v1::codec::JobToJson(running);
  ASSERT_EQ(done["status"]["conditions"].size(), 1u) << done["status"].dump();
  EXPECT_EQ(done["status"]["conditions"][0]["type"], "Complete");
  EXPECT_EQ(done["status"]["conditions"][0]["reason"], "AllJobsCompleted");
  EXPECT_EQ(done["status"]["conditions"][0]["message"], "jobset completed successfully");
  EXPECT_EQ(done["status"]["jobsStatus"][0]["succeeded"], 1);
}

TEST(TrainJobReconcileTest, TheTrainerWaitsForItsInitializer) {
  const model::Job job = MakeTrainJob("with-data", 1);
  model::ObservedState observed = ObservedWithRuntime(InitializerRuntime());
  model::ReconcileResult first = Reconcile(job, observed, kNow, {});
  std::vector<std::string> pods;
  for (const std::string& a : ActionsText(first)) {
    if (a.rfind("create Pod/", 0) == 0) pods.push_back(a);
  }
  ASSERT_EQ(pods.size(), 1u) << ::testing::PrintToString(ActionsText(first));
  EXPECT_EQ(pods[0].rfind("create Pod/mnist-dataset-initializer-0-0-", 0), 0u) << pods[0];

  model::Job running = job;
  *running.mutable_status() = first.status;
  observed.runtime_from_snapshot = true;
  observed.objects = {{"Service", "mnist"}, {"ConfigMap", "mnist-runtime-snapshot"}};
  model::KubeObject init_pod;
  for (const model::Action& a : first.actions) {
    if (a.object.kind == "Pod") init_pod = a.object;
  }
  observed.pods = {ObservedPodOf(init_pod, model::PodPhase::kRunning)};
  EXPECT_TRUE(ActionsText(Reconcile(running, observed, kNow + absl::Seconds(1), {})).empty());

  observed.pods = {ObservedPodOf(init_pod, model::PodPhase::kSucceeded)};
  model::ReconcileResult next = Reconcile(running, observed, kNow + absl::Seconds(2), {});
  ASSERT_EQ(next.actions.size(), 1u) << ::testing::PrintToString(ActionsText(next));
  EXPECT_EQ(next.actions[0].object.name.rfind("mnist-node-0-0-", 0), 0u);
  // An initializer that finished is not a finished TrainJob.
  EXPECT_FALSE(IsFinished(next.status));
}

TEST(TrainJobReconcileTest, AFailedNodeFailsTheJobInUpstreamsWords) {
  const model::Job job = MakeTrainJob("torch-distributed", 1);
  model::ObservedState observed = ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml"));
  model::ReconcileResult first = Reconcile(job, observed, kNow, {});
  model::Job running = job;
  *running.mutable_status() = first.status;
  observed.runtime_from_snapshot = true;
  model::ObservedPod failed = ObservedPodOf(first.actions[2].object, model::PodPhase::kFailed);
  failed.restart_count = 7;  // past the Job's default backoffLimit (6)
  observed.pods = {failed};
  model::ReconcileResult r = Reconcile(running, observed, kNow + absl::Seconds(30), {});
  *running.mutable_status() = r.status;
  const json shown = api::v1::codec::JobToJson(running);
  ASSERT_EQ(shown["status"]["conditions"].size(), 1u) << shown["status"].dump();
  EXPECT_EQ(shown["status"]["conditions"][0]["type"], "Failed");
  EXPECT_EQ(shown["status"]["conditions"][0]["reason"], "FailedJobs");
  EXPECT_EQ(shown["status"]["conditions"][0]["message"],
            "jobset failed due to one or more job failures (first failed job: mnist-node-0)");
}

TEST(TrainJobReconcileTest, AMissingRuntimeIsAnEventAndARetryNotAFailure) {
  const model::Job job = MakeTrainJob("nowhere", 1);
  model::ObservedState observed;
  observed.runtime_missing = "spec.runtimeRef: ClusterTrainingRuntime nowhere not found";
  model::ReconcileResult r = Reconcile(job, observed, kNow, {});
  EXPECT_TRUE(r.actions.empty());
  EXPECT_THAT(EventReasons(r), ElementsAre("TrainJobResourcesCreationFailed"));
  EXPECT_EQ(r.requeue_at, kNow + absl::Seconds(10));
  EXPECT_FALSE(r.status_changed);
}

TEST(TrainJobReconcileTest, WhatUpstreamsWebhookRefusesFailsNamingTheField) {
  absl::StatusOr<model::Job> job = api::v1::codec::JobFromJson(json::parse(R"({
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "mnist", "namespace": "ns", "uid": "uid-1"},
    "spec": {"runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime",
                            "apiGroup": "trainer.kubeflow.org"},
             "trainer": {"numNodes": 1, "env": [{"name": "PET_NNODES", "value": "9"}]},
             "suspend": false, "managedBy": "trainer.kubeflow.org/trainjob-controller"}})"));
  ASSERT_TRUE(job.ok()) << job.status();
  model::ReconcileResult r =
      Reconcile(*job, ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, {});
  EXPECT_TRUE(ActionsText(r).empty()) << ::testing::PrintToString(ActionsText(r));
  model::Job failed = *job;
  *failed.mutable_status() = r.status;
  const json shown = api::v1::codec::JobToJson(failed);
  ASSERT_EQ(shown["status"]["conditions"].size(), 1u) << shown["status"].dump();
  EXPECT_EQ(shown["status"]["conditions"][0]["type"], "Failed");
  EXPECT_EQ(shown["status"]["conditions"][0]["reason"], "FailedValidation");
  EXPECT_NE(shown["status"]["conditions"][0]["message"].get<std::string>().find("spec.trainer.env"),
            std::string::npos)
      << shown["status"]["conditions"][0]["message"];
}

TEST(TrainJobReconcileTest, TrainJobPodsGetWhatCoachAddsToEveryReplica) {
  model::Job job = MakeTrainJob("torch-distributed", 1);
  (*job.mutable_metadata()->mutable_annotations())["coach.dev/launcher"] = "true";
  model::ReconcileConfig config;
  config.mlflow.tracking_uri = "http://mlflow.example:5000";
  config.launcher_image = "coach:dev";
  model::ReconcileResult r =
      Reconcile(job, ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, config);
  const model::KubeObject* pod = nullptr;
  for (const model::Action& a : r.actions) {
    if (a.object.kind == "Pod") pod = &a.object;
  }
  ASSERT_NE(pod, nullptr);
  const json& node = pod->body["spec"]["containers"][0];
  json env = json::object();
  for (const json& e : node["env"]) env[e["name"].get<std::string>()] = e.value("value", "");
  EXPECT_EQ(env["MLFLOW_TRACKING_URI"], "http://mlflow.example:5000") << node.dump();
  EXPECT_EQ(env["PET_NNODES"], "1");
  // coach-launch runs the trainer's own command.
  const std::string command = node["command"].dump();
  EXPECT_NE(command.find("coach-launch"), std::string::npos) << command;
  EXPECT_NE(command.find("torchrun"), std::string::npos) << command;
  EXPECT_EQ(pod->body["spec"]["initContainers"][0]["name"], "coach-launch-install");
}

TEST(TrainJobReconcileTest, AnotherManagerIsLeftAlone) {
  model::Job job = MakeTrainJob("torch-distributed", 1);
  job.mutable_spec()->mutable_run_policy()->set_managed_by("kueue.x-k8s.io/multikueue");
  model::ReconcileResult r =
      Reconcile(job, ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, {});
  EXPECT_TRUE(r.actions.empty());
  EXPECT_FALSE(r.status_changed);
}

}  // namespace
}  // namespace coach::reconcile

namespace coach::reconcile {
namespace {

// Upstream's DeepSpeed runtime (MPI) with a shared claim: the SSH Secret (its keys are the
// backend's to make: none in the plan), the PVC, and with coscheduling the PodGroup, all before
// the pods, which carry the group's label.
TEST(TrainJobReconcileTest, MpiSecretClaimsAndPodGroupComeBeforeThePods) {
  absl::StatusOr<json> runtime = trainer::testing::LoadReferenceKind(
      "runtimes/deepspeed_distributed.yaml", "ClusterTrainingRuntime");
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  (*runtime)["spec"]["template"]["spec"]["volumeClaimPolicies"] = json::parse(
      R"([{"templates": [{"metadata": {"name": "scratch"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}])");
  (*runtime)["spec"]["podGroupPolicy"] = json::parse(R"({"coscheduling": {}})");
  const model::Job job = MakeTrainJob("deepspeed-distributed", 2);
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kSchedulerPlugins;
  model::ReconcileResult r = Reconcile(job, ObservedWithRuntime(*runtime), kNow, config);
  const std::vector<std::string> actions = ActionsText(r);
  ASSERT_GE(actions.size(), 7u) << ::testing::PrintToString(actions);
  EXPECT_EQ(actions[0], "create Service/mnist");
  EXPECT_EQ(actions[1], "create ConfigMap/mnist-mpi-hostfile");
  EXPECT_EQ(actions[2], "create Secret/mnist-mpi-ssh-auth");
  EXPECT_EQ(actions[3], "create PersistentVolumeClaim/scratch-mnist");
  EXPECT_EQ(actions[4], "create PodGroup/mnist");
  const json& secret = r.actions[2].object.body;
  EXPECT_EQ(secret["type"], "kubernetes.io/ssh-auth");
  EXPECT_FALSE(secret.contains("data"));
  EXPECT_EQ(r.actions[4].object.body["spec"]["minMember"],
            2);  // runLauncherAsNode: 1 node + launcher
  for (const model::Action& a : r.actions) {
    if (a.object.kind != "Pod") continue;
    EXPECT_EQ(a.object.body["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "mnist");
  }

  // Without the gang scheduler the runtime asks for: an event and a retry, nothing created.
  model::ReconcileResult waiting = Reconcile(job, ObservedWithRuntime(*runtime), kNow, {});
  EXPECT_TRUE(waiting.actions.empty()) << ::testing::PrintToString(ActionsText(waiting));
  EXPECT_THAT(EventReasons(waiting), ElementsAre("TrainJobResourcesCreationFailed"));
  EXPECT_EQ(waiting.requeue_at, kNow + absl::Seconds(10));
}

}  // namespace
}  // namespace coach::reconcile
