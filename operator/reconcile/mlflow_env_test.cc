#include "operator/reconcile/mlflow_env.h"

#include <gtest/gtest.h>

#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/desired_objects.h"

namespace coach::reconcile {
namespace {

using testing::MakePyTorchJob;

model::Job Annotated(std::initializer_list<std::pair<const char*, const char*>> annotations) {
  model::Job job = MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  for (const auto& [k, v] : annotations) (*job.mutable_metadata()->mutable_annotations())[k] = v;
  return job;
}

std::string EnvOf(const model::KubeObject& pod, const std::string& name) {
  for (const Json& e : pod.body["spec"]["containers"][0]["env"]) {
    if (e.value("name", "") == name) return e.value("value", "<fieldRef>");
  }
  return "<unset>";
}

TEST(MlflowEnvTest, ValidateTrackingUri) {
  EXPECT_TRUE(ValidateTrackingUri("http://127.0.0.1:5000").ok());
  EXPECT_TRUE(ValidateTrackingUri("https://mlflow.example.com/prefix/").ok());
  EXPECT_FALSE(ValidateTrackingUri("").ok());
  EXPECT_FALSE(ValidateTrackingUri("file:///tmp/mlruns").ok());
  EXPECT_FALSE(ValidateTrackingUri("databricks").ok());
  EXPECT_FALSE(ValidateTrackingUri("http://").ok());
  EXPECT_FALSE(ValidateTrackingUri("http://:5000").ok());
  EXPECT_FALSE(ValidateTrackingUri("http://host name").ok());
  EXPECT_FALSE(ValidateTrackingUri("http://a?b=c").ok());
  absl::Status with_secret = ValidateTrackingUri("http://u:s3cret@host");
  EXPECT_TRUE(absl::IsInvalidArgument(with_secret));
  EXPECT_EQ(std::string(with_secret.message()).find("s3cret"), std::string::npos);
}

TEST(MlflowEnvTest, ValidateAnnotationsNamesTheAnnotation) {
  model::MlflowConfig config;
  config.allowed_tracking_uris = {"http://h:1"};
  EXPECT_TRUE(ValidateMlflowAnnotations(Annotated({}), config).ok());
  EXPECT_TRUE(ValidateMlflowAnnotations(Annotated({{kAnnotationMlflowTrackingUri, "http://h:1/"},
                                                   {kAnnotationMlflowExperiment, "e"},
                                                   {kAnnotationMlflow, "true"}}),
                                        config)
                  .ok());
  absl::Status bad =
      ValidateMlflowAnnotations(Annotated({{kAnnotationMlflowTrackingUri, "ftp://x"}}), config);
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_NE(std::string(bad.message()).find("coach.dev/mlflow-tracking-uri"), std::string::npos)
      << bad;
  bad = ValidateMlflowAnnotations(Annotated({{kAnnotationMlflow, "yes"}}), config);
  EXPECT_NE(std::string(bad.message()).find("metadata.annotations[coach.dev/mlflow]"),
            std::string::npos);
  bad = ValidateMlflowAnnotations(Annotated({{kAnnotationMlflowExperiment, ""}}), config);
  EXPECT_NE(std::string(bad.message()).find("coach.dev/mlflow-experiment"), std::string::npos);
}

// A job must not direct the operator's calls (and its credentials) to a server of its choosing.
TEST(MlflowEnvTest, AJobNamesOnlyTheOperatorsServerOrAnAllowedOne) {
  model::MlflowConfig config;
  config.tracking_uri = "http://ml:5000/";
  auto check = [&](const char* uri) {
    return ValidateMlflowAnnotations(Annotated({{kAnnotationMlflowTrackingUri, uri}}), config);
  };
  EXPECT_TRUE(check("http://ml:5000").ok());
  absl::Status refused = check("http://127.0.0.1:8080");
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(std::string(refused.message()).find("--mlflow-allowed-tracking-uris"),
            std::string::npos)
      << refused;
  config.allowed_tracking_uris = {"http://127.0.0.1:8080", "http://169.254.169.254"};
  EXPECT_TRUE(check("http://127.0.0.1:8080/").ok());
  // Link-local and metadata addresses, allowed or not.
  for (const char* uri :
       {"http://169.254.169.254", "http://169.254.169.254/latest/meta-data", "http://[fe80::1]:80",
        "http://metadata.google.internal", "http://METADATA.google.internal:80"}) {
    SCOPED_TRACE(uri);
    absl::Status s = check(uri);
    EXPECT_TRUE(absl::IsInvalidArgument(s));
    EXPECT_NE(std::string(s.message()).find("metadata"), std::string::npos) << s;
  }
  EXPECT_TRUE(IsOperatorsServer("http://ml:5000", config));
  EXPECT_FALSE(IsOperatorsServer("http://127.0.0.1:8080", config));
  EXPECT_FALSE(IsOperatorsServer("http://ml:5000", model::MlflowConfig{}));
}

TEST(MlflowEnvTest, CredentialsReachOnlyReplicasTrackedOnTheOperatorsServer) {
  model::ReconcileConfig config;
  config.mlflow.tracking_uri = "http://wide:5000";
  config.mlflow.allowed_tracking_uris = {"http://team:5000"};
  config.mlflow.forwarded_env = {{"MLFLOW_TRACKING_TOKEN", "operators-token"}};
  auto pod = DesiredPod(Annotated({}), "Master", 0, config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_TOKEN"), "operators-token");
  pod = DesiredPod(Annotated({{kAnnotationMlflowTrackingUri, "http://team:5000"}}), "Master", 0,
                   config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_URI"), "http://team:5000");
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_TOKEN"), "<unset>");
}

TEST(MlflowEnvTest, TargetFromAnnotationsOrOperator) {
  model::MlflowConfig none;
  model::MlflowConfig wide;
  wide.tracking_uri = "http://wide:5000";
  wide.experiment = "team";
  EXPECT_FALSE(MlflowTargetFor(Annotated({}), none).has_value());
  auto t = MlflowTargetFor(Annotated({}), wide);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->tracking_uri, "http://wide:5000");
  EXPECT_EQ(t->experiment, "team");
  t = MlflowTargetFor(Annotated({{kAnnotationMlflowTrackingUri, "http://job:1"}}), none);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->tracking_uri, "http://job:1");
  EXPECT_EQ(t->experiment, "coach");
  t = MlflowTargetFor(Annotated({{kAnnotationMlflowExperiment, "mine"}}), wide);
  EXPECT_EQ(t->experiment, "mine");
  EXPECT_FALSE(MlflowTargetFor(Annotated({{kAnnotationMlflow, "false"}}), wide).has_value());
}

TEST(MlflowEnvTest, PodsGetRunVariablesWithoutOverridingTheUsers) {
  model::ReconcileConfig config;
  config.mlflow.tracking_uri = "http://wide:5000";
  config.mlflow.forwarded_env = {{"MLFLOW_TRACKING_TOKEN", "tok"}};
  model::Job job =
      Annotated({{kAnnotationMlflowRunId, "r1"}, {kAnnotationMlflowExperimentId, "7"}});
  job.mutable_metadata()->set_uid("u-1");
  auto pod = DesiredPod(job, "Worker", 0, config);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_URI"), "http://wide:5000");
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_EXPERIMENT_NAME"), "coach");
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_TOKEN"), "tok");
  // MLflow resumes MLFLOW_RUN_ID whatever the code does next, and raises when the code names
  // another experiment or server: the run reaches the replica under coach's own names only.
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_RUN_ID"), "<unset>");
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_EXPERIMENT_ID"), "<unset>");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_RUN_ID"), "r1");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_EXPERIMENT_ID"), "7");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_TRACKING_URI"), "http://wide:5000");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_REPLICA"), "worker-0");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_RESUME"), "<unset>");
  EXPECT_EQ(Json::parse(EnvOf(*pod, "MLFLOW_RUN_CONTEXT")),
            Json::parse(R"({"coach.job_uid":"u-1","coach.namespace":"ns","coach.job_name":"j",
                            "coach.kind":"PyTorchJob","coach.replica":"worker-0",
                            "coach.replica_type":"Worker","coach.replica_index":"0",
                            "mlflow.parentRunId":"r1"})"));
  // Only the job's master resumes the job's run.
  pod = DesiredPod(job, "Master", 0, config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_RESUME"), "1");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_REPLICA"), "master-0");

  // Not yet created: no run id, no parent.
  pod = DesiredPod(Annotated({}), "Master", 0, config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_URI"), "http://wide:5000");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_RUN_ID"), "<unset>");
  EXPECT_EQ(EnvOf(*pod, "COACH_MLFLOW_RESUME"), "<unset>");
  EXPECT_FALSE(Json::parse(EnvOf(*pod, "MLFLOW_RUN_CONTEXT")).contains("mlflow.parentRunId"));

  // A container's own MLFLOW_TRACKING_URI wins.
  model::Job own =
      MakePyTorchJob("ns", "j")
          .Master(1)
          .Template(
              "Master",
              R"({"spec":{"containers":[{"name":"pytorch","image":"x","ports":[{"name":"pytorchjob-port","containerPort":23456}],
                          "env":[{"name":"MLFLOW_TRACKING_URI","value":"http://mine"}]}]}})")
          .Build();
  pod = DesiredPod(own, "Master", 0, config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_URI"), "http://mine");

  // Untracked: nothing added.
  pod = DesiredPod(Annotated({}), "Master", 0, model::ReconcileConfig{});
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_TRACKING_URI"), "<unset>");
}

TEST(MlflowEnvTest, TheExperimentFollowsTheContainers) {
  model::ReconcileConfig config;
  config.mlflow.tracking_uri = "http://wide:5000";
  config.mlflow.experiment = "team";
  const char* tmpl = R"({"spec":{"containers":[{"name":"pytorch","image":"x",
      "env":[{"name":"MLFLOW_EXPERIMENT_NAME","value":"theirs"}]}]}})";
  model::Job job = MakePyTorchJob("ns", "j").Master(1).Workers(1).Template("Worker", tmpl).Build();
  // The job's run goes where the code's own runs go.
  EXPECT_EQ(MlflowTargetFor(job, config.mlflow)->experiment, "theirs");
  auto pod = DesiredPod(job, "Master", 0, config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_EXPERIMENT_NAME"), "theirs");
  // The annotation still wins.
  (*job.mutable_metadata()->mutable_annotations())[kAnnotationMlflowExperiment] = "named";
  EXPECT_EQ(MlflowTargetFor(job, config.mlflow)->experiment, "named");

  // A container naming its experiment by id gets no MLFLOW_EXPERIMENT_NAME beside it (MLflow
  // raises when the two name different experiments).
  model::Job by_id =
      MakePyTorchJob("ns", "j")
          .Master(1)
          .Template("Master", R"({"spec":{"containers":[{"name":"pytorch","image":"x",
              "ports":[{"name":"pytorchjob-port","containerPort":23456}],
              "env":[{"name":"MLFLOW_EXPERIMENT_ID","value":"12"}]}]}})")
          .Build();
  pod = DesiredPod(by_id, "Master", 0, config);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_EXPERIMENT_NAME"), "<unset>");
  EXPECT_EQ(EnvOf(*pod, "MLFLOW_EXPERIMENT_ID"), "12");
  EXPECT_EQ(MlflowTargetFor(by_id, config.mlflow)->experiment, "team");

  // A name MLflow would refuse is not taken from a container.
  model::Job bad = MakePyTorchJob("ns", "j")
                       .Master(1)
                       .Template("Master", R"({"spec":{"containers":[{"name":"pytorch","image":"x",
                           "env":[{"name":"MLFLOW_EXPERIMENT_NAME","value":""}]}]}})")
                       .Build();
  EXPECT_EQ(MlflowTargetFor(bad, config.mlflow)->experiment, "team");
}

TEST(MlflowEnvTest, ClearOperatorAnnotations) {
  model::Job job = Annotated({{kAnnotationMlflowRunId, "r"},
                              {kAnnotationMlflowExperimentId, "1"},
                              {kAnnotationMlflowExperiment, "e"}});
  ClearOperatorMlflowAnnotations(&job);
  EXPECT_EQ(job.metadata().annotations().size(), 1u);
  EXPECT_EQ(job.metadata().annotations().count(kAnnotationMlflowExperiment), 1u);
}

}  // namespace
}  // namespace coach::reconcile
