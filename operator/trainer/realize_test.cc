#include "operator/trainer/realize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "operator/trainer/merge_runtime.h"
#include "operator/trainer/names.h"
#include "operator/trainer/reference_data.h"

namespace coach::trainer {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using json = nlohmann::json;

json Load(const std::string& path, const std::string& kind) {
  absl::StatusOr<json> doc = testing::LoadReferenceKind(path, kind);
  EXPECT_TRUE(doc.ok()) << doc.status();
  return doc.ok() ? *doc : json::object();
}

const ClusterFacts kFacts = {"js-uid", {{"node", "node-uid"}, {"launcher", "launcher-uid"}}, 0};

RealizedTrainJob MustRealize(json train_job, const json& runtime,
                             const ClusterFacts& facts = kFacts) {
  train_job["metadata"]["uid"] = "tj-uid";
  absl::StatusOr<MergedTrainJob> merged = MergeRuntime(train_job, runtime);
  EXPECT_TRUE(merged.ok()) << merged.status();
  if (!merged.ok()) return {};
  absl::StatusOr<RealizedTrainJob> r = RealizeTrainJob(train_job, *merged, facts);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : RealizedTrainJob{};
}

RealizedTrainJob MultiNode() {
  return MustRealize(Load("examples/yaml/01-multi-node.yaml", "TrainJob"),
                     Load("runtimes/torch_distributed.yaml", "ClusterTrainingRuntime"));
}

TEST(RealizeTrainJobTest, TorchPodsNamesAndNetwork) {
  RealizedTrainJob r = MultiNode();
  ASSERT_EQ(r.jobs.size(), 1u);
  const RealizedJob& job = r.jobs[0];
  EXPECT_EQ(job.name, "node");
  EXPECT_EQ(job.job_name, "multi-node-example-node-0");
  EXPECT_EQ(job.ancestor_step, "trainer");
  EXPECT_EQ(job.pod_count, 3);
  EXPECT_EQ(job.depends_on, json::array());
  ASSERT_EQ(job.pods.size(), 3u);
  const json& pod = job.pods[1];
  EXPECT_THAT(pod["metadata"]["name"].get<std::string>(),
              MatchesRegex("multi-node-example-node-0-1-[bcdfghjklmnpqrstvwxz2456789]{5}"));
  EXPECT_EQ(pod["metadata"]["generateName"], "multi-node-example-node-0-1-");
  EXPECT_EQ(pod["metadata"]["namespace"], "default");
  EXPECT_EQ(pod["spec"]["hostname"], "multi-node-example-node-0-1");
  EXPECT_EQ(pod["spec"]["subdomain"], "multi-node-example");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(pod["metadata"]["ownerReferences"], json::parse(R"([{"apiVersion": "batch/v1",
      "kind": "Job", "name": "multi-node-example-node-0", "uid": "node-uid", "controller": true,
      "blockOwnerDeletion": true}])"));
  const json& env = pod["spec"]["containers"][0]["env"];
  EXPECT_EQ(env.back(), json::parse(R"({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef":
      {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}})"));
  EXPECT_EQ(env[3]["value"], "multi-node-example-node-0-0.multi-node-example");

  EXPECT_EQ(r.service, json::parse(R"({"apiVersion": "v1", "kind": "Service",
      "metadata": {"name": "multi-node-example", "namespace": "default", "ownerReferences": [
          {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "multi-node-example",
           "uid": "js-uid", "controller": true, "blockOwnerDeletion": true}]},
      "spec": {"clusterIP": "None", "selector": {"jobset.sigs.k8s.io/jobset-name": "multi-node-example"},
               "publishNotReadyAddresses": true}})"));
  EXPECT_TRUE(r.mpi_hostfile.is_null());
}

TEST(RealizeTrainJobTest, LabelsAndAnnotationsOfJobSetAndJob) {
  const json pod = MultiNode().jobs[0].pods[2];
  const json jobset_marks = json::parse(R"({
      "jobset.sigs.k8s.io/jobset-name": "multi-node-example",
      "jobset.sigs.k8s.io/jobset-uid": "js-uid",
      "jobset.sigs.k8s.io/replicatedjob-name": "node",
      "jobset.sigs.k8s.io/restart-attempt": "0",
      "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
      "jobset.sigs.k8s.io/global-replicas": "1",
      "jobset.sigs.k8s.io/job-index": "0",
      "jobset.sigs.k8s.io/job-key": "65669d389c5e534c162a3d66e7ae429e92b5239b",
      "jobset.sigs.k8s.io/job-global-index": "0",
      "jobset.sigs.k8s.io/group-name": "default",
      "jobset.sigs.k8s.io/group-replicas": "1",
      "jobset.sigs.k8s.io/job-group-index": "0"})");
  json labels = jobset_marks;
  labels["batch.kubernetes.io/job-completion-index"] = "2";
  labels["batch.kubernetes.io/job-name"] = "multi-node-example-node-0";
  labels["job-name"] = "multi-node-example-node-0";
  labels["batch.kubernetes.io/controller-uid"] = "node-uid";
  labels["controller-uid"] = "node-uid";
  json annotations = jobset_marks;
  annotations["batch.kubernetes.io/job-completion-index"] = "2";
  EXPECT_EQ(pod["metadata"]["labels"], labels);  // no trainjob-ancestor-step on pods
  EXPECT_EQ(pod["metadata"]["annotations"], annotations);
}

TEST(RealizeTrainJobTest, PodNamesAreDeterministic) {
  const std::string a = MultiNode().jobs[0].pods[0]["metadata"]["name"];
  EXPECT_EQ(MultiNode().jobs[0].pods[0]["metadata"]["name"], a);
  EXPECT_EQ(PodName("default", "multi-node-example", "tj-uid", "node", 0), a);
  EXPECT_NE(PodName("default", "multi-node-example", "other-uid", "node", 0), a);
  EXPECT_NE(PodName("default", "multi-node-example", "tj-uid", "node", 1).substr(a.size() - 5),
            a.substr(a.size() - 5));
  EXPECT_NE(PodName("other", "multi-node-example", "tj-uid", "node", 0), a);
}

// DeepSpeed with three nodes: two node pods and the launcher in the hostfile, the launcher's
// pod after node in the JobSet's global order.
TEST(RealizeTrainJobTest, MpiHostfileAndLauncher) {
  json train_job =
      json::parse(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
      "metadata": {"name": "ds", "namespace": "default"},
      "spec": {"runtimeRef": {"name": "deepspeed-distributed", "kind": "ClusterTrainingRuntime",
                              "apiGroup": "trainer.kubeflow.org"},
               "trainer": {"numNodes": 3, "numProcPerNode": 2}}})");
  RealizedTrainJob r =
      MustRealize(train_job, Load("runtimes/deepspeed_distributed.yaml", "ClusterTrainingRuntime"));
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].name, "node");
  EXPECT_EQ(r.jobs[0].pod_count, 2);
  EXPECT_EQ(r.jobs[0].ancestor_step, "");
  EXPECT_EQ(r.jobs[1].name, "launcher");
  EXPECT_EQ(r.jobs[1].depends_on, json::parse(R"([{"name": "node", "status": "Ready"}])"));
  EXPECT_EQ(r.mpi_hostfile["metadata"]["name"], "ds-mpi-hostfile");
  EXPECT_EQ(r.mpi_hostfile["data"]["hostfile"],
            "ds-node-0-0.ds slots=2\nds-node-0-1.ds slots=2\nds-launcher-0-0.ds slots=2\n");
  EXPECT_EQ(r.mpi_hostfile["metadata"]["ownerReferences"][0]["uid"], "tj-uid");
  const json& launcher = r.jobs[1].pods[0];
  EXPECT_EQ(launcher["spec"]["hostname"], "ds-launcher-0-0");
  EXPECT_EQ(launcher["metadata"]["labels"]["jobset.sigs.k8s.io/job-global-index"], "1");
  EXPECT_EQ(launcher["metadata"]["labels"]["jobset.sigs.k8s.io/global-replicas"], "2");
  EXPECT_EQ(launcher["metadata"]["labels"]["jobset.sigs.k8s.io/job-key"],
            "23b106845cfb2d95ea52b55ec7526fcfb98aab23");
  EXPECT_EQ(launcher["metadata"]["labels"]["controller-uid"], "launcher-uid");
  EXPECT_EQ(launcher["spec"]["securityContext"]["fsGroup"], 1000);
}

// torchtune: the runtime's volume claim template becomes a PVC volume wherever it is mounted.
TEST(RealizeTrainJobTest, VolumeClaimPoliciesBecomeVolumes) {
  json train_job =
      json::parse(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
      "metadata": {"name": "tt", "namespace": "team"},
      "spec": {"runtimeRef": {"name": "torchtune-llama3.2-1b"}, "trainer": {"command": ["tune", "run"]}}})");
  RealizedTrainJob r = MustRealize(
      train_job, Load("runtimes/torchtune/llama3_2/llama3_2_1B.yaml", "ClusterTrainingRuntime"));
  ASSERT_EQ(r.jobs.size(), 3u);
  for (const RealizedJob& job : r.jobs) {
    ASSERT_EQ(job.pods.size(), 1u) << job.name;
    EXPECT_EQ(job.pods[0]["spec"]["volumes"], json::parse(R"([{"name": "initializer",
        "persistentVolumeClaim": {"claimName": "initializer-tt"}}])"))
        << job.name;
  }
  EXPECT_EQ(r.jobs[2].depends_on.size(), 2u);
}

TEST(RealizeTrainJobTest, RestartPolicyAndSubdomainFromTheRuntime) {
  json runtime = Load("runtimes/torch_distributed.yaml", "ClusterTrainingRuntime");
  runtime["spec"]["template"]["spec"]["network"] = {{"subdomain", "mesh"}};
  runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
         ["restartPolicy"] = "Never";
  RealizedTrainJob r = MustRealize(Load("examples/yaml/01-multi-node.yaml", "TrainJob"), runtime);
  EXPECT_EQ(r.jobs[0].pods[0]["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(r.jobs[0].pods[0]["spec"]["subdomain"], "mesh");
  EXPECT_EQ(r.service["metadata"]["name"], "mesh");
}

TEST(RealizeTrainJobTest, ReplicasOtherThanOneAreRefused) {
  json runtime = Load("runtimes/torch_distributed.yaml", "ClusterTrainingRuntime");
  json train_job = Load("examples/yaml/01-multi-node.yaml", "TrainJob");
  absl::StatusOr<MergedTrainJob> merged = MergeRuntime(train_job, runtime);
  ASSERT_TRUE(merged.ok()) << merged.status();
  merged->job_set["spec"]["replicatedJobs"][0]["replicas"] = 2;
  absl::StatusOr<RealizedTrainJob> r = RealizeTrainJob(train_job, *merged, kFacts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("spec.template.spec.replicatedJobs[0].replicas"));
}

}  // namespace
}  // namespace coach::trainer
