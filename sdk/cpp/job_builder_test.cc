#include "sdk/cpp/job_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace coach::sdk {
namespace {

using api::v1::TrainingJob;
using ::testing::HasSubstr;

nlohmann::json Template(const TrainingJob& job, const std::string& type) {
  return nlohmann::json::parse(job.spec().replica_specs().at(type).template_json());
}

TEST(JobBuilderTest, PyTorchJobAsInTheExample) {
  absl::StatusOr<TrainingJob> job = JobBuilder::PyTorch("mnist")
                                        .Namespace("ml")
                                        .Image("pytorch/pytorch:2.3")
                                        .Command({"python3", "train.py"})
                                        .Masters(1)
                                        .Workers(2)
                                        .NprocPerNode("2")
                                        .RestartPolicy("OnFailure")
                                        .Env("EPOCHS", "3")
                                        .Env("LR", "0.1")
                                        .Env("EPOCHS", "5")
                                        .Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), api::v1::PYTORCH_JOB);
  EXPECT_EQ(job->metadata().name(), "mnist");
  EXPECT_EQ(job->metadata().namespace_(), "ml");
  EXPECT_EQ(job->spec().nproc_per_node(), "2");
  ASSERT_EQ(job->spec().replica_specs().size(), 2u);
  EXPECT_EQ(job->spec().replica_specs().at("Master").replicas(), 1);
  EXPECT_EQ(job->spec().replica_specs().at("Worker").replicas(), 2);
  EXPECT_EQ(job->spec().replica_specs().at("Worker").restart_policy(), "OnFailure");
  nlohmann::json expected = nlohmann::json::parse(R"({"spec": {"containers": [{
      "name": "pytorch", "image": "pytorch/pytorch:2.3", "command": ["python3", "train.py"],
      "env": [{"name": "EPOCHS", "value": "5"}, {"name": "LR", "value": "0.1"}]}]}})");
  EXPECT_EQ(Template(*job, "Master"), expected);
  EXPECT_EQ(Template(*job, "Worker"), expected);
}

TEST(JobBuilderTest, TFJobWithPsChiefAndResources) {
  absl::StatusOr<TrainingJob> job = JobBuilder::TensorFlow("tf")
                                        .Image("tensorflow/tensorflow:2.15")
                                        .Args({"--steps=10"})
                                        .Chief(1)
                                        .PS(1)
                                        .Workers(3)
                                        .Evaluator(1)
                                        .Resource("cpu", "2")
                                        .Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), api::v1::TF_JOB);
  EXPECT_EQ(job->spec().replica_specs().size(), 4u);
  nlohmann::json container = Template(*job, "PS")["spec"]["containers"][0];
  EXPECT_EQ(container["name"], "tensorflow");
  EXPECT_EQ(container["args"], nlohmann::json::array({"--steps=10"}));
  EXPECT_EQ(container["resources"]["limits"]["cpu"], "2");
  EXPECT_EQ(container["resources"]["requests"]["cpu"], "2");
  EXPECT_EQ(job->spec().replica_specs().at("PS").restart_policy(), "");
}

TEST(JobBuilderTest, XGBoostJob) {
  absl::StatusOr<TrainingJob> job =
      JobBuilder::XGBoost("xgb").Image("xgb:1").Masters(1).Workers(2).Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), api::v1::XGBOOST_JOB);
  EXPECT_EQ(Template(*job, "Master")["spec"]["containers"][0]["name"], "xgboost");
}

TEST(JobBuilderTest, MPIJobWithLauncherAndSlots) {
  absl::StatusOr<TrainingJob> job = JobBuilder::MPI("mpi")
                                        .Image("mpioperator/mpi-pi")
                                        .Launcher(1)
                                        .Workers(2)
                                        .SlotsPerWorker(4)
                                        .CleanPodPolicy("Running")
                                        .Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), api::v1::MPI_JOB);
  EXPECT_EQ(job->spec().slots_per_worker(), 4);
  EXPECT_EQ(job->spec().run_policy().clean_pod_policy(), "Running");
  EXPECT_EQ(job->spec().replica_specs().at("Launcher").replicas(), 1);
  EXPECT_EQ(Template(*job, "Worker")["spec"]["containers"][0]["name"], "mpi");
}

TEST(JobBuilderTest, PaddleJobWithElasticPolicy) {
  absl::StatusOr<TrainingJob> job =
      JobBuilder::Paddle("paddle").Image("paddle:2").Workers(2).Elastic(1, 4).Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), api::v1::PADDLE_JOB);
  EXPECT_EQ(job->spec().elastic_policy().min_replicas(), 1);
  EXPECT_EQ(job->spec().elastic_policy().max_replicas(), 4);
  EXPECT_EQ(Template(*job, "Worker")["spec"]["containers"][0]["name"], "paddle");
}

TEST(JobBuilderTest, JAXJobWithRunPolicy) {
  absl::StatusOr<TrainingJob> job = JobBuilder::JAX("jax")
                                        .Image("jax:0.4")
                                        .Workers(4)
                                        .BackoffLimit(3)
                                        .ActiveDeadlineSeconds(3600)
                                        .TtlSecondsAfterFinished(60)
                                        .Suspend(true)
                                        .Queue("gpu")
                                        .Label("team", "research")
                                        .Annotation("note", "x")
                                        .WorkingDir("/work")
                                        .ImagePullPolicy("IfNotPresent")
                                        .Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), api::v1::JAX_JOB);
  const api::v1::RunPolicy& run = job->spec().run_policy();
  EXPECT_EQ(run.backoff_limit(), 3);
  EXPECT_EQ(run.active_deadline_seconds(), 3600);
  EXPECT_EQ(run.ttl_seconds_after_finished(), 60);
  EXPECT_TRUE(run.suspend());
  EXPECT_EQ(run.scheduling_policy().queue(), "gpu");
  EXPECT_EQ(job->metadata().labels().at("team"), "research");
  EXPECT_EQ(job->metadata().annotations().at("note"), "x");
  nlohmann::json container = Template(*job, "Worker")["spec"]["containers"][0];
  EXPECT_EQ(container["name"], "jax");
  EXPECT_EQ(container["workingDir"], "/work");
  EXPECT_EQ(container["imagePullPolicy"], "IfNotPresent");
}

TEST(JobBuilderTest, LowercaseReplicaTypesAreCanonicalized) {
  absl::StatusOr<TrainingJob> job =
      JobBuilder::TensorFlow("tf").Image("i").Replicas("ps", 1).Replicas("worker", 2).Build();
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().replica_specs().count("PS"), 1u);
  EXPECT_EQ(job->spec().replica_specs().count("Worker"), 1u);
}

TEST(JobBuilderTest, ErrorsNameEveryProblem) {
  absl::StatusOr<TrainingJob> job =
      JobBuilder::JAX("").Masters(1).Workers(-1).NprocPerNode("2").SlotsPerWorker(2).Build();
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  std::string message(job.status().message());
  EXPECT_THAT(message, HasSubstr("metadata.name"));
  EXPECT_THAT(message, HasSubstr("image"));
  EXPECT_THAT(message, HasSubstr("replicas.Master: JAXJob has no such replica type"));
  EXPECT_THAT(message, HasSubstr("replicas.Worker: must not be negative"));
  EXPECT_THAT(message, HasSubstr("nprocPerNode"));
  EXPECT_THAT(message, HasSubstr("slotsPerWorker"));
}

TEST(JobBuilderTest, NoReplicasIsAnError) {
  EXPECT_EQ(JobBuilder::PyTorch("p").Image("i").Build().status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coach::sdk
