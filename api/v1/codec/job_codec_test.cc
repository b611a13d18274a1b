#include "api/v1/codec/job_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "api/v1/codec/yaml_json.h"

namespace coach::api::v1::codec {
namespace {

using nlohmann::json;

const char* const kValidFiles[] = {"pytorchjob", "tfjob",     "xgboostjob",
                                   "mpijob",     "paddlejob", "jaxjob"};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Valid(const std::string& name) {
  return ReadFile("api/v1/testdata/valid/" + name + ".yaml");
}

std::string ErrorOf(const std::string& text) {
  auto jobs = ParseManifests(text);
  EXPECT_FALSE(jobs.ok()) << text;
  return jobs.ok() ? "" : std::string(jobs.status().message());
}

TEST(JobCodecTest, EveryKindRoundTripsFromYaml) {
  for (const char* name : kValidFiles) {
    SCOPED_TRACE(name);
    std::string text = Valid(name);
    auto original = ParseYaml(text);
    ASSERT_TRUE(original.ok()) << original.status();
    auto jobs = ParseManifests(text);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ(JobToJson(jobs->front()), *original);
    // And again through the YAML writer.
    auto again = ParseManifests(JobToYamlString(jobs->front()));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(JobToJson(again->front()), *original);
  }
}

TEST(JobCodecTest, EveryKindRoundTripsThroughJson) {
  for (const char* name : kValidFiles) {
    SCOPED_TRACE(name);
    auto jobs = ParseManifests(Valid(name));
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    std::string as_json = JobsToJson(*jobs);
    auto from_json = ParseManifests(as_json);
    ASSERT_TRUE(from_json.ok()) << from_json.status();
    EXPECT_EQ(JobToJson(from_json->front()), JobToJson(jobs->front()));
    EXPECT_EQ(json::parse(as_json), JobToJson(jobs->front()));
  }
}

TEST(JobCodecTest, MultiDocumentAndListRoundTrip) {
  std::string all;
  std::vector<json> originals;
  for (const char* name : kValidFiles) {
    all += "---\n" + Valid(name);
    originals.push_back(*ParseYaml(Valid(name)));
  }
  auto jobs = ParseManifests(all);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 6u);
  for (size_t i = 0; i < jobs->size(); ++i) EXPECT_EQ(JobToJson((*jobs)[i]), originals[i]);

  auto from_yaml = ParseManifests(JobsToYaml(*jobs));
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  ASSERT_EQ(from_yaml->size(), 6u);
  auto from_list = ParseManifests(JobsToJson(*jobs));
  ASSERT_TRUE(from_list.ok()) << from_list.status();
  ASSERT_EQ(from_list->size(), 6u);
  for (size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ(JobToJson((*from_yaml)[i]), originals[i]);
    EXPECT_EQ(JobToJson((*from_list)[i]), originals[i]);
  }
}

TEST(JobCodecTest, DecodesFieldsIntoTheModel) {
  auto jobs = ParseManifests(Valid("pytorchjob"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const TrainingJob& job = jobs->front();
  EXPECT_EQ(job.kind(), PYTORCH_JOB);
  EXPECT_EQ(job.metadata().name(), "pytorch-mnist");
  EXPECT_EQ(job.metadata().labels().at("app"), "mnist");
  EXPECT_EQ(job.metadata().annotations().at("note"), "1");
  EXPECT_EQ(json::parse(job.metadata().extra_json())["finalizers"][0], "example.com/keep");
  EXPECT_EQ(job.spec().nproc_per_node(), "2");
  EXPECT_EQ(job.spec().elastic_policy().max_replicas(), 4);
  EXPECT_EQ(job.spec().elastic_policy().rdzv_conf(0).value(), "900");
  EXPECT_EQ(job.spec().run_policy().clean_pod_policy(), "Running");
  EXPECT_EQ(job.spec().run_policy().active_deadline_seconds(), 3600);
  EXPECT_EQ(job.spec().run_policy().scheduling_policy().min_resources().at("memory"), "16Gi");
  ASSERT_EQ(job.spec().replica_specs().count("Worker"), 1u);
  EXPECT_EQ(job.spec().replica_specs().at("Worker").replicas(), 2);
  EXPECT_EQ(job.spec().replica_specs().at("Worker").restart_policy(), "ExitCode");
  json tmpl = json::parse(job.spec().replica_specs().at("Master").template_json());
  EXPECT_EQ(tmpl["spec"]["volumes"][0]["name"], "data");
  EXPECT_FALSE(job.has_status());
}

TEST(JobCodecTest, StatusIsDecoded) {
  auto jobs = ParseManifests(Valid("tfjob"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const TrainingJobStatus& status = jobs->front().status();
  ASSERT_EQ(status.conditions_size(), 2);
  EXPECT_EQ(status.conditions(1).type(), "Running");
  EXPECT_EQ(status.replica_statuses().at("Worker").active(), 2);
  EXPECT_EQ(status.start_time().seconds(), 1714564800);
}

TEST(JobCodecTest, ReplicaTypesAreNormalised) {
  auto jobs = ParseManifests(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: t}
spec:
  tfReplicaSpecs:
    worker: {replicas: 2}
    ps: {}
    CHIEF: {}
)");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const auto& specs = jobs->front().spec().replica_specs();
  EXPECT_EQ(specs.count("Worker"), 1u);
  EXPECT_EQ(specs.count("PS"), 1u);
  EXPECT_EQ(specs.count("Chief"), 1u);
  EXPECT_TRUE(JobToJson(jobs->front())["spec"]["tfReplicaSpecs"].contains("Worker"));
}

TEST(JobCodecTest, NumericQuantitiesBecomeStrings) {
  auto jobs = ParseManifests(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: j}
spec:
  runPolicy: {schedulingPolicy: {minResources: {cpu: 4, memory: 0.5}}}
  jaxReplicaSpecs: {Worker: {}}
)");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const auto& resources = jobs->front().spec().run_policy().scheduling_policy().min_resources();
  EXPECT_EQ(resources.at("cpu"), "4");
  EXPECT_EQ(resources.at("memory"), "0.5");
}

TEST(JobCodecTest, TypeErrorsNameThePathAndWhatWasExpected) {
  std::string error = ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  runPolicy: {backoffLimit: x, suspend: "yes"}
  pytorchReplicaSpecs: {Worker: {replicas: 1.5}}
)");
  EXPECT_NE(error.find("spec.runPolicy.backoffLimit: must be an integer, got string \"x\""),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("spec.runPolicy.suspend: must be a boolean"), std::string::npos) << error;
  EXPECT_NE(error.find("spec.pytorchReplicaSpecs.Worker.replicas: must be an integer, got "
                       "number 1.5"),
            std::string::npos)
      << error;
  // All three on their own lines.
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 2) << error;
}

TEST(JobCodecTest, FieldsOfAnotherKindAreErrors) {
  std::string error = ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  slotsPerWorker: 1
  tfReplicaSpecs: {}
  pytorchReplicaSpecs: {Worker: {}}
)");
  EXPECT_NE(error.find("spec.slotsPerWorker: not a field of PyTorchJob (only of MPIJob)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("spec.tfReplicaSpecs: not a field of PyTorchJob (only of TFJob)"),
            std::string::npos)
      << error;
  std::string tf = ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: t}
spec: {elasticPolicy: {}, tfReplicaSpecs: {Worker: {}}}
)");
  EXPECT_NE(tf.find("spec.elasticPolicy: not a field of TFJob"), std::string::npos) << tf;
}

TEST(JobCodecTest, ErrorsOfSeveralDocumentsArePrefixed) {
  std::string error = ErrorOf(Valid("jaxjob") + "---\n" + R"(
apiVersion: kubeflow.org/v2
kind: JAXJob
metadata: {name: j}
spec: {jaxReplicaSpecs: {Worker: {}}, bogus: 1}
)");
  EXPECT_NE(error.find("document 2: apiVersion: must be kubeflow.org/v1"), std::string::npos)
      << error;
  EXPECT_NE(error.find("document 2: spec.bogus: unknown field"), std::string::npos) << error;
  EXPECT_EQ(error.find("document 1"), std::string::npos) << error;
}

TEST(JobCodecTest, NullsCountAsAbsent) {
  auto jobs = ParseManifests(R"(
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: x, creationTimestamp: null}
spec:
  runPolicy: {backoffLimit: null}
  xgbReplicaSpecs: {Master: {replicas: null, template: null}}
)");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_FALSE(jobs->front().spec().run_policy().has_backoff_limit());
  EXPECT_FALSE(jobs->front().spec().replica_specs().at("Master").has_replicas());
  EXPECT_FALSE(jobs->front().metadata().has_creation_timestamp());
}

TEST(JobCodecTest, EmptyTextIsAnError) {
  auto jobs = ParseManifests("---\n# nothing\n");
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.status().message().find("no manifest"), std::string::npos);
}

}  // namespace
}  // namespace coach::api::v1::codec
