// TrainJob (trainer.kubeflow.org/v1alpha1) through the job codec: upstream's own examples read
// and written back unchanged, coach's vocabulary kept in status.coach, upstream's conditions
// derived from it.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/job_conditions.h"

namespace coach::api::v1::codec {
namespace {

using nlohmann::json;

std::string SharedDir() {
  const char* dir = std::getenv("COACH_SHARED_DIR");
  EXPECT_NE(dir, nullptr) << "COACH_SHARED_DIR must point at the shared folder";
  return dir != nullptr ? dir : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

json Doc(const std::string& yaml) {
  auto docs = ParseYamlDocuments(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status();
  return docs.ok() && !docs->empty() ? docs->front() : json();
}

const char kTrainJob[] = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: mnist, namespace: team-a}
spec:
  runtimeRef: {name: torch-distributed, kind: ClusterTrainingRuntime, apiGroup: trainer.kubeflow.org}
  trainer: {numNodes: 2, image: "pytorch/pytorch:2", command: [torchrun, train.py]}
  suspend: false
  activeDeadlineSeconds: 600
  managedBy: trainer.kubeflow.org/trainjob-controller
)";

TEST(TrainJobCodecTest, UpstreamExamplesRoundTrip) {
  const std::string dir = SharedDir() + "/reference/kubeflow-v2/examples/yaml/";
  for (const char* name : {"01-multi-node.yaml", "02-runtime-patches.yaml",
                           "03-kueue-integration.yaml", "05-multi-step.yaml"}) {
    auto docs = ParseYamlDocuments(ReadFile(dir + name));
    ASSERT_TRUE(docs.ok()) << name << ": " << docs.status();
    for (const json& doc : *docs) {
      if (doc.value("kind", "") != "TrainJob") continue;
      absl::StatusOr<TrainingJob> job = JobFromJson(doc);
      ASSERT_TRUE(job.ok()) << name << ": " << job.status();
      EXPECT_EQ(job->kind(), TRAIN_JOB);
      EXPECT_EQ(JobToJson(*job), doc) << name;
    }
  }
}

TEST(TrainJobCodecTest, RunPolicyFieldsComeFromTheSpec) {
  absl::StatusOr<TrainingJob> job = JobFromJson(Doc(kTrainJob));
  ASSERT_TRUE(job.ok()) << job.status();
  const RunPolicy& rp = job->spec().run_policy();
  EXPECT_FALSE(rp.suspend());
  EXPECT_EQ(rp.active_deadline_seconds(), 600);
  EXPECT_EQ(rp.managed_by(), "trainer.kubeflow.org/trainjob-controller");
  const json kept = json::parse(job->spec().train_job_spec_json());
  EXPECT_FALSE(kept.contains("suspend"));
  EXPECT_EQ(kept["runtimeRef"]["name"], "torch-distributed");
  // A suspend made through the model is the manifest's.
  TrainingJob suspended = *job;
  suspended.mutable_spec()->mutable_run_policy()->set_suspend(true);
  EXPECT_EQ(JobToJson(suspended)["spec"]["suspend"], true);
}

TEST(TrainJobCodecTest, TtlAfterFinishedIsCoachsAnnotation) {
  json doc = Doc(kTrainJob);
  doc["metadata"]["annotations"]["coach.dev/ttl-seconds-after-finished"] = "30";
  absl::StatusOr<TrainingJob> job = JobFromJson(doc);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().run_policy().ttl_seconds_after_finished(), 30);
  EXPECT_EQ(JobToJson(*job), doc);
  // Set through the model, it is written where a TrainJob keeps it.
  TrainingJob plain = *JobFromJson(Doc(kTrainJob));
  plain.mutable_spec()->mutable_run_policy()->set_ttl_seconds_after_finished(5);
  EXPECT_EQ(JobToJson(plain)["metadata"]["annotations"]["coach.dev/ttl-seconds-after-finished"],
            "5");
  doc["metadata"]["annotations"]["coach.dev/ttl-seconds-after-finished"] = "soon";
  EXPECT_NE(
      JobFromJson(doc).status().message().find(
          "metadata.annotations[coach.dev/ttl-seconds-after-finished]: must be a whole number"),
      std::string::npos);
}

TEST(TrainJobCodecTest, WrongShapesNameTheField) {
  json doc = Doc(kTrainJob);
  doc["apiVersion"] = "kubeflow.org/v1";
  EXPECT_NE(
      JobFromJson(doc).status().message().find("apiVersion: must be trainer.kubeflow.org/v1alpha1"),
      std::string::npos);
  doc = Doc(kTrainJob);
  doc["spec"].erase("runtimeRef");
  EXPECT_NE(JobFromJson(doc).status().message().find("spec.runtimeRef: required"),
            std::string::npos);
  doc = Doc(kTrainJob);
  doc["spec"]["activeDeadlineSeconds"] = 0;
  EXPECT_NE(JobFromJson(doc).status().message().find("spec.activeDeadlineSeconds: must be >= 1"),
            std::string::npos);
  doc = Doc(kTrainJob);
  doc["spec"]["podTemplateOverrides"] = json::array();
  EXPECT_NE(JobFromJson(doc).status().message().find("spec.podTemplateOverrides: unknown field"),
            std::string::npos);
  doc = Doc(kTrainJob);
  doc["spec"]["suspend"] = "yes";
  EXPECT_NE(JobFromJson(doc).status().message().find("spec.suspend: must be a boolean"),
            std::string::npos);
}

TEST(TrainJobCodecTest, UpstreamSeesOnlyItsConditionsAndCoachKeepsItsOwn) {
  json doc = Doc(kTrainJob);
  doc["status"] = Doc(R"(
coach:
  attempt: 1
  conditions:
  - {type: Created, status: "True", reason: TrainJobCreated, message: created,
     lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Suspended, status: "False", reason: TrainJobResumed, message: resumed,
     lastUpdateTime: "2026-01-01T00:01:00Z", lastTransitionTime: "2026-01-01T00:01:00Z"}
  - {type: Running, status: "False", reason: TrainJobRunning, message: running,
     lastUpdateTime: "2026-01-01T00:02:00Z", lastTransitionTime: "2026-01-01T00:02:00Z"}
  - {type: Succeeded, status: "True", reason: TrainJobSucceeded, message: done,
     lastUpdateTime: "2026-01-01T00:03:00Z", lastTransitionTime: "2026-01-01T00:03:00Z"}
  replicaStatuses:
    node: {succeeded: 2}
  startTime: "2026-01-01T00:00:00Z"
  completionTime: "2026-01-01T00:03:00Z"
jobsStatus:
- {name: node, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}
)");
  absl::StatusOr<TrainingJob> job = JobFromJson(doc);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->status().conditions_size(), 4);
  EXPECT_EQ(job->status().coach().attempt(), 1);
  EXPECT_EQ(job->status().replica_statuses().at("node").succeeded(), 2);
  ASSERT_EQ(job->status().jobs_status_size(), 1);
  EXPECT_EQ(job->status().jobs_status(0).succeeded(), 1);

  const json out = JobToJson(*job);
  EXPECT_EQ(out["status"]["conditions"], Doc(R"(
- {type: Suspended, status: "False", reason: Resumed, message: TrainJob is resumed,
   lastTransitionTime: "2026-01-01T00:01:00Z"}
- {type: Complete, status: "True", reason: AllJobsCompleted, message: jobset completed successfully,
   lastTransitionTime: "2026-01-01T00:03:00Z"}
)"));
  EXPECT_EQ(out["status"]["coach"], doc["status"]["coach"]);
  EXPECT_EQ(out["status"]["jobsStatus"], doc["status"]["jobsStatus"]);
  // Round trip through the model: nothing lost, nothing added.
  absl::StatusOr<TrainingJob> again = JobFromJson(out);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(JobToJson(*again), out);
}

// Kueue holds the job: coach's Queued condition stays in status.coach, upstream readers see
// Suspended only (the Kubeflow SDK reads any other condition as "not running").
TEST(TrainJobCodecTest, QueuedStaysInCoachsStatus) {
  json doc = Doc(kTrainJob);
  doc["status"] = Doc(R"(
coach:
  conditions:
  - {type: Created, status: "True", reason: TrainJobCreated, message: created,
     lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Suspended, status: "True", reason: TrainJobSuspended, message: suspended,
     lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}
  - {type: Queued, status: "True", reason: TrainJobWaitingForQuota,
     message: "Waiting for quota: LocalQueue user-queue -> ClusterQueue cluster-queue",
     lastUpdateTime: "2026-01-01T00:00:01Z", lastTransitionTime: "2026-01-01T00:00:01Z"}
)");
  absl::StatusOr<TrainingJob> job = JobFromJson(doc);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->status().conditions_size(), 3);
  EXPECT_EQ(job->status().conditions(2).type(), "Queued");
  const json out = JobToJson(*job);
  EXPECT_EQ(out["status"]["conditions"], Doc(R"(
- {type: Suspended, status: "True", reason: Suspended, message: TrainJob is suspended,
   lastTransitionTime: "2026-01-01T00:00:00Z"}
)"));
  EXPECT_EQ(out["status"]["coach"], doc["status"]["coach"]);
}

TEST(TrainJobCodecTest, UpstreamConditionsAloneAreReadIntoCoachsWords) {
  json doc = Doc(kTrainJob);
  doc["status"] = Doc(R"(
conditions:
- {type: Failed, status: "True", reason: FailedJobs, message: "jobset failed",
   lastTransitionTime: "2026-01-01T00:03:00Z"}
- {type: SomethingElse, status: "True", reason: X, message: y, lastTransitionTime: "2026-01-01T00:03:00Z"}
trainerStatus: {progressPercentage: 40, lastUpdatedTime: "2026-01-01T00:02:00Z"}
)");
  absl::StatusOr<TrainingJob> job = JobFromJson(doc);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->status().conditions_size(), 1);
  EXPECT_EQ(job->status().conditions(0).type(), kJobFailed);
  EXPECT_EQ(job->status().conditions(0).reason(), "FailedJobs");
  const json out = JobToJson(*job);
  EXPECT_EQ(out["status"]["conditions"][0]["reason"], "FailedJobs");
  EXPECT_EQ(out["status"]["trainerStatus"]["progressPercentage"], 40);
}

}  // namespace
}  // namespace coach::api::v1::codec
