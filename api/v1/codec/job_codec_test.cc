#include "api/v1/codec/job_codec.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
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

TrainingJob ValidJobOf(const std::string& name) {
  auto jobs = ParseManifests(Valid(name));
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  return jobs.ok() ? jobs->front() : TrainingJob();
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

constexpr char kCoachStatusJob[] = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs: {Worker: {replicas: 2}}
status:
  coach:
    attempt: 2
    restarts: 1
    disruptions: 1
    inPlaceRestarts: 1
    restartsByType: {Worker: 1}
    attemptRunningTime: "2024-05-01T12:00:00Z"
    restartTime: "2024-05-01T11:59:50Z"
    progress:
      step: 1200
      metrics: {loss: 0.25, accuracy: 0.5, epoch: 3.0}
      stepsPerSecond: 3.5
      lastProgressTime: "2024-05-01T12:05:00Z"
)";

TEST(JobCodecTest, CoachStatusRoundTrips) {
  auto jobs = ParseManifests(kCoachStatusJob);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const CoachJobStatus& coach = jobs->front().status().coach();
  EXPECT_EQ(coach.attempt(), 2);
  EXPECT_EQ(coach.restarts(), 1);
  EXPECT_EQ(coach.disruptions(), 1);
  EXPECT_EQ(coach.restarts_by_type().at("Worker"), 1);
  EXPECT_EQ(coach.attempt_running_time().seconds(), 1714564800);
  EXPECT_EQ(coach.restart_time().seconds(), 1714564790);
  EXPECT_EQ(coach.in_place_restarts(), 1);
  EXPECT_EQ(coach.progress().step(), 1200);
  EXPECT_EQ(coach.progress().metrics().at("loss"), 0.25);
  EXPECT_EQ(coach.progress().metrics().at("epoch"), 3.0);
  EXPECT_EQ(coach.progress().steps_per_second(), 3.5);
  EXPECT_EQ(coach.progress().last_progress_time().seconds(), 1714565100);

  const json original = *ParseYaml(kCoachStatusJob);
  EXPECT_EQ(JobToJson(jobs->front()), original);
  auto from_yaml = ParseManifests(JobToYamlString(jobs->front()));
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  EXPECT_EQ(JobToJson(from_yaml->front()), original);
  auto from_json = ParseManifests(JobsToJson(*jobs));
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  EXPECT_EQ(JobToJson(from_json->front()), original);
  auto recoded = RecodeJob(jobs->front());
  ASSERT_TRUE(recoded.ok()) << recoded.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*recoded, jobs->front()));
}

// The API server writes a number without a fraction as an integer: it reads as the double.
TEST(JobCodecTest, CoachStatusNumbersMayBeIntegers) {
  auto job = JobFromJson(json::parse(R"({
    "apiVersion": "kubeflow.org/v1", "kind": "JAXJob", "metadata": {"name": "j"},
    "spec": {"jaxReplicaSpecs": {"Worker": {}}},
    "status": {"coach": {"progress": {"metrics": {"loss": 2, "big": 18446744073709551615},
                                      "stepsPerSecond": 4}}}})"));
  ASSERT_TRUE(job.ok()) << job.status();
  const JobProgress& progress = job->status().coach().progress();
  EXPECT_EQ(progress.metrics().at("loss"), 2.0);
  EXPECT_EQ(progress.metrics().at("big"), 18446744073709551615.0);
  EXPECT_EQ(progress.steps_per_second(), 4.0);
}

// As the rest of the status: zeros are left out, so a job without coach status, or with an empty
// one, encodes as it would without the field.
TEST(JobEncoderTest, CoachStatusLeavesOutZeros) {
  TrainingJob job = ValidJobOf("tfjob");
  const json before = JobToJson(job);
  EXPECT_FALSE(before["status"].contains("coach"));
  CoachJobStatus* coach = job.mutable_status()->mutable_coach();
  EXPECT_EQ(JobToJson(job)["status"]["coach"], json::object());
  coach->mutable_progress()->set_step(0);
  (*coach->mutable_restarts_by_type())["Worker"] = 0;
  EXPECT_EQ(JobToJson(job)["status"]["coach"],
            json::parse(R"({"restartsByType": {"Worker": 0}, "progress": {}})"));
  json without = JobToJson(job);
  without["status"].erase("coach");
  EXPECT_EQ(without, before);
}

// JSON has no NaN or infinity: such a metric or rate is left out, without a problem, and the
// manifest stays valid JSON that reads back.
TEST(JobEncoderTest, NonFiniteProgressNumbersAreLeftOut) {
  TrainingJob job = ValidJobOf("pytorchjob");
  JobProgress* progress = job.mutable_status()->mutable_coach()->mutable_progress();
  progress->set_step(7);
  progress->set_steps_per_second(std::numeric_limits<double>::quiet_NaN());
  auto& metrics = *progress->mutable_metrics();
  metrics["loss"] = std::numeric_limits<double>::quiet_NaN();
  metrics["grad_norm"] = std::numeric_limits<double>::infinity();
  metrics["lr"] = -std::numeric_limits<double>::infinity();
  metrics["accuracy"] = 0.5;
  json manifest;
  EXPECT_TRUE(EncodeJob(job, &manifest).empty());
  EXPECT_EQ(manifest["status"]["coach"]["progress"],
            json::parse(R"({"step": 7, "metrics": {"accuracy": 0.5}})"));
  const std::string text = JobsToJson({job});
  EXPECT_EQ(text.find("null"), std::string::npos) << text;
  auto read = ParseManifests(text);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->front().status().coach().progress().metrics().size(), 1u);
  EXPECT_TRUE(RecodeJob(job).ok());
  // Only non-finite metrics: no metrics at all.
  metrics.erase("accuracy");
  EXPECT_FALSE(JobToJson(job)["status"]["coach"]["progress"].contains("metrics"));
}

TEST(JobCodecTest, BadCoachStatusNamesTheField) {
  std::string error = ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec: {pytorchReplicaSpecs: {Worker: {}}}
status:
  coach:
    attempt: -1
    restarts: "x"
    disruptions: 1.5
    restartsByType: {Worker: -2, Master: "one"}
    attemptRunningTime: yesterday
    restartTime: later
    inPlaceRestarts: -3
    bogus: 1
    progress:
      step: -5
      stepsPerSecond: -1.5
      metrics: {"": 1, loss: "low", ok: 1}
      lastProgressTime: 5
      extra: {}
)");
  for (const char* want : {
           "status.coach.attempt: must be >= 0, got -1",
           "status.coach.restarts: must be an integer, got string \"x\"",
           "status.coach.disruptions: must be an integer, got number 1.5",
           "status.coach.restartsByType[Worker]: must be >= 0, got -2",
           "status.coach.restartsByType[Master]: must be an integer, got string \"one\"",
           "status.coach.attemptRunningTime: must be an RFC 3339 timestamp",
           "status.coach.restartTime: must be an RFC 3339 timestamp",
           "status.coach.inPlaceRestarts: must be >= 0, got -3",
           "status.coach.bogus: unknown field",
           "status.coach.progress.step: must be >= 0, got -5",
           "status.coach.progress.stepsPerSecond: must be >= 0, got -1.5",
           "status.coach.progress.metrics: a metric name must have 1 to 250 characters, got "
           "string \"\"",
           "status.coach.progress.metrics[loss]: must be a number, got string \"low\"",
           "status.coach.progress.lastProgressTime: must be an RFC 3339 timestamp",
           "status.coach.progress.extra: unknown field",
       }) {
    EXPECT_NE(error.find(want), std::string::npos) << want << " in:\n" << error;
  }
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 14) << error;
  EXPECT_EQ(ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec: {pytorchReplicaSpecs: {Worker: {}}}
status: {coach: [1]}
)"),
            "status.coach: must be an object, got a list");
}

TEST(JobCodecTest, CoachStatusMapsAreBounded) {
  json manifest = *ParseYaml(kCoachStatusJob);
  json& coach = manifest["status"]["coach"];
  for (int i = 0; i < 65; ++i) coach["progress"]["metrics"]["m" + std::to_string(i)] = i;
  for (int i = 0; i < 17; ++i) coach["restartsByType"]["T" + std::to_string(i)] = 1;
  auto job = JobFromJson(manifest);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "status.coach.restartsByType: must have at most 16 entries, got 18\n"
            "status.coach.progress.metrics: must have at most 64 entries, got 68");

  // At the bounds: accepted.
  coach["progress"]["metrics"] = json::object();
  coach["restartsByType"] = json::object();
  for (int i = 0; i < 64; ++i) coach["progress"]["metrics"]["m" + std::to_string(i)] = i;
  for (int i = 0; i < 16; ++i) coach["restartsByType"]["T" + std::to_string(i)] = 1;
  coach["progress"]["metrics"][std::string(250, 'n')] = 1;
  coach["progress"]["metrics"].erase("m0");
  ASSERT_TRUE(JobFromJson(manifest).ok()) << JobFromJson(manifest).status();
  // Characters, not bytes, as the CRD's rule counts them: 250 two-byte characters.
  std::string accented;
  for (int i = 0; i < 250; ++i) accented += "\u00e9";
  coach["progress"]["metrics"].erase("m1");
  coach["progress"]["metrics"][accented] = 1;
  ASSERT_TRUE(JobFromJson(manifest).ok()) << JobFromJson(manifest).status();
  coach["progress"]["metrics"].erase(accented);

  coach["progress"]["metrics"].erase(std::string(250, 'n'));
  coach["progress"]["metrics"][std::string(251, 'n')] = 1;
  auto long_name = JobFromJson(manifest);
  ASSERT_FALSE(long_name.ok());
  EXPECT_NE(long_name.status().message().find(
                "status.coach.progress.metrics: a metric name must have 1 to 250 characters, got "
                "string \"nnnn"),
            std::string::npos)
      << long_name.status();
}

TEST(JobCodecTest, CoachStatusRejectsNonFiniteNumbersBuiltInCode) {
  json manifest = *ParseYaml(kCoachStatusJob);
  manifest["status"]["coach"]["progress"]["metrics"]["loss"] =
      std::numeric_limits<double>::quiet_NaN();
  manifest["status"]["coach"]["progress"]["stepsPerSecond"] =
      std::numeric_limits<double>::infinity();
  auto job = JobFromJson(manifest);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "status.coach.progress.stepsPerSecond: must be a finite number\n"
            "status.coach.progress.metrics[loss]: must be a finite number");
}

constexpr char kElasticStatusJob[] = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs: {Worker: {replicas: 3}}
status:
  coach:
    elastic:
      minWorkers: 2
      maxWorkers: 3
      workers: 3
      changes:
      - {time: "2024-05-01T12:00:00Z", workers: 2, step: 1500, why: Worker replica 1 exited with code 137}
      - {time: "2024-05-01T12:03:00Z", workers: 3, step: 1600, why: Worker replica 1 runs}
      - {workers: 0}
)";

TEST(JobCodecTest, ElasticStatusRoundTrips) {
  auto jobs = ParseManifests(kElasticStatusJob);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const ElasticStatus& elastic = jobs->front().status().coach().elastic();
  EXPECT_EQ(elastic.min_workers(), 2);
  EXPECT_EQ(elastic.max_workers(), 3);
  EXPECT_EQ(elastic.workers(), 3);
  ASSERT_EQ(elastic.changes_size(), 3);
  EXPECT_EQ(elastic.changes(0).time().seconds(), 1714564800);
  EXPECT_EQ(elastic.changes(0).workers(), 2);
  EXPECT_EQ(elastic.changes(0).step(), 1500);
  EXPECT_EQ(elastic.changes(0).why(), "Worker replica 1 exited with code 137");
  EXPECT_EQ(elastic.changes(1).workers(), 3);
  EXPECT_FALSE(elastic.changes(2).has_time());

  const json original = *ParseYaml(kElasticStatusJob);
  EXPECT_EQ(JobToJson(jobs->front()), original);
  auto from_yaml = ParseManifests(JobToYamlString(jobs->front()));
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  EXPECT_EQ(JobToJson(from_yaml->front()), original);
  auto from_json = ParseManifests(JobsToJson(*jobs));
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  EXPECT_EQ(JobToJson(from_json->front()), original);
  auto recoded = RecodeJob(jobs->front());
  ASSERT_TRUE(recoded.ok()) << recoded.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*recoded, jobs->front()));
}

// Zeros are left out as in the rest of status.coach, except the Workers counts: 0 Workers
// running is a state, not an absent value. A job without elastic status gets no key.
TEST(JobEncoderTest, ElasticStatusAlwaysHasItsWorkers) {
  TrainingJob job = ValidJobOf("pytorchjob");
  job.mutable_status()->mutable_coach()->set_restarts(1);
  EXPECT_FALSE(JobToJson(job)["status"]["coach"].contains("elastic"));
  ElasticStatus* elastic = job.mutable_status()->mutable_coach()->mutable_elastic();
  EXPECT_EQ(JobToJson(job)["status"]["coach"]["elastic"], json::parse(R"({"workers": 0})"));
  elastic->add_changes();
  EXPECT_EQ(JobToJson(job)["status"]["coach"]["elastic"],
            json::parse(R"({"workers": 0, "changes": [{"workers": 0}]})"));
  auto recoded = RecodeJob(job);
  ASSERT_TRUE(recoded.ok()) << recoded.status();
  EXPECT_TRUE(recoded->status().coach().has_elastic());
  EXPECT_EQ(recoded->status().coach().elastic().changes_size(), 1);
}

TEST(JobCodecTest, BadElasticStatusNamesTheField) {
  std::string error = ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec: {pytorchReplicaSpecs: {Worker: {}}}
status:
  coach:
    elastic:
      minWorkers: -1
      maxWorkers: "3"
      workers: -2
      size: 3
      changes:
      - {time: soon, workers: -1, step: -5, why: 7, who: me}
      - 3
)");
  for (const char* want : {
           "status.coach.elastic.minWorkers: must be >= 0, got -1",
           "status.coach.elastic.maxWorkers: must be an integer, got string \"3\"",
           "status.coach.elastic.workers: must be >= 0, got -2",
           "status.coach.elastic.size: unknown field",
           "status.coach.elastic.changes[0].time: must be an RFC 3339 timestamp",
           "status.coach.elastic.changes[0].workers: must be >= 0, got -1",
           "status.coach.elastic.changes[0].step: must be >= 0, got -5",
           "status.coach.elastic.changes[0].why: must be a string, got integer 7",
           "status.coach.elastic.changes[0].who: unknown field",
           "status.coach.elastic.changes[1]: must be an object, got integer 3",
       }) {
    EXPECT_NE(error.find(want), std::string::npos) << want << " in:\n" << error;
  }
  EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 9) << error;
  EXPECT_EQ(ErrorOf(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec: {pytorchReplicaSpecs: {Worker: {}}}
status: {coach: {elastic: {workers: 1, changes: {time: "2024-05-01T12:00:00Z"}}}}
)"),
            "status.coach.elastic.changes: must be a list, got an object");
}

TEST(JobCodecTest, ElasticChangesAreBounded) {
  json manifest = *ParseYaml(kElasticStatusJob);
  json& changes = manifest["status"]["coach"]["elastic"]["changes"];
  while (changes.size() < 20) changes.push_back(json{{"workers", 2}});
  // At the bounds: accepted. Characters, not bytes, as the CRD's maxLength counts them.
  std::string accented;
  for (int i = 0; i < 512; ++i) accented += "\u00e9";
  changes[0]["why"] = accented;
  ASSERT_TRUE(JobFromJson(manifest).ok()) << JobFromJson(manifest).status();

  changes[0]["why"] = std::string(513, 'w');
  changes.push_back(json{{"workers", 2}});
  auto too_many = JobFromJson(manifest);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(),
            "status.coach.elastic.changes: must have at most 20 entries, got 21");
  changes.erase(changes.size() - 1);
  auto too_long = JobFromJson(manifest);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().message(),
            "status.coach.elastic.changes[0].why: must have at most 512 characters");
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

TrainingJob ValidJob() { return ValidJobOf("pytorchjob"); }

// A job whose free-form fields hold what no manifest could: the encoder says which and leaves
// them out instead of throwing (a throw from JobToJson on an extra_json of [1,2] would abort
// `coach get`).
TEST(JobEncoderTest, UnreadableFreeFormFieldsAreReportedAndLeftOut) {
  TrainingJob job = ValidJob();
  job.mutable_metadata()->set_extra_json("[1,2]");
  auto& worker = (*job.mutable_spec()->mutable_replica_specs())["Worker"];
  worker.set_template_json(std::string(100000, '[') + std::string(100000, ']'));
  job.mutable_spec()->mutable_elastic_policy()->set_metrics_json("{not json");
  (*job.mutable_status()->mutable_replica_statuses())["Worker"].set_label_selector_json("\"x\"");
  json manifest;
  std::vector<FieldError> errors = EncodeJob(job, &manifest);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].path, "metadata.extra_json");
  EXPECT_EQ(errors[0].message,
            "must be a JSON object (the metadata fields ObjectMeta does not model), got a list");
  EXPECT_EQ(errors[1].path, "spec.pytorchReplicaSpecs.Worker.template");
  EXPECT_NE(errors[1].message.find("template_json: line 1, column 97: document is nested deeper "
                                   "than 100 levels"),
            std::string::npos)
      << errors[1].message;
  EXPECT_EQ(errors[2].path, "spec.elasticPolicy.metrics");
  EXPECT_NE(errors[2].message.find("metrics_json is not valid JSON: "), std::string::npos);
  // label_selector_json is JSON (a string): the decoder says what is wrong with it.
  EXPECT_EQ(manifest["status"]["replicaStatuses"]["Worker"]["labelSelector"], "x");
  EXPECT_EQ(manifest["metadata"]["name"], job.metadata().name());
  EXPECT_FALSE(manifest["spec"]["pytorchReplicaSpecs"]["Worker"].contains("template"));
  EXPECT_FALSE(manifest["spec"]["elasticPolicy"].contains("metrics"));

  EXPECT_EQ(JobToJson(job), manifest);
  EXPECT_FALSE(JobToYamlString(job).empty());
  EXPECT_FALSE(JobsToJson({job, job}).empty());
  auto checked = JobToJsonChecked(job);
  ASSERT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(checked.status().message().substr(0, 21), "metadata.extra_json: ");
}

TEST(JobEncoderTest, ExtraJsonMustNotHoldModelledFields) {
  TrainingJob job = ValidJob();
  job.mutable_metadata()->set_extra_json(R"({"finalizers": ["x"], "name": "other"})");
  json manifest;
  std::vector<FieldError> errors = EncodeJob(job, &manifest);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            (FieldError{"metadata.extra_json",
                        "must not hold \"name\": ObjectMeta has a field of its own for it"}));
  EXPECT_EQ(manifest["metadata"]["name"], job.metadata().name());
  EXPECT_EQ(manifest["metadata"]["finalizers"], json::array({"x"}));
}

TEST(JobEncoderTest, InvalidTimestampsDoNotThrow) {
  TrainingJob job = ValidJob();
  job.mutable_metadata()->mutable_creation_timestamp()->set_seconds(-999999999999999);
  job.mutable_status()->add_conditions()->mutable_last_update_time()->set_nanos(-5);
  json manifest = JobToJson(job);
  EXPECT_TRUE(manifest["metadata"]["creationTimestamp"].is_string());
  // Whatever the encoder wrote, the decoder refuses it as a timestamp.
  auto recoded = RecodeJob(job);
  ASSERT_FALSE(recoded.ok());
  EXPECT_NE(recoded.status().message().find("metadata.creationTimestamp: must be an RFC 3339"),
            std::string::npos)
      << recoded.status();
}

// A well formed job recodes to itself, for every kind.
TEST(RecodeJobTest, DecodedJobsRecodeToThemselves) {
  for (const char* name : kValidFiles) {
    SCOPED_TRACE(name);
    auto jobs = ParseManifests(Valid(name));
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    auto recoded = RecodeJob(jobs->front());
    ASSERT_TRUE(recoded.ok()) << recoded.status();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*recoded, jobs->front()))
        << recoded->DebugString();
  }
}

TEST(RecodeJobTest, ReportsEveryProblemOfBothSteps) {
  TrainingJob job = ValidJob();
  job.mutable_metadata()->set_extra_json("null");
  (*job.mutable_spec()->mutable_replica_specs())["Worker"].set_template_json("[1]");
  job.mutable_spec()->set_slots_per_worker(1);
  auto recoded = RecodeJob(job);
  ASSERT_EQ(recoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(recoded.status().message(),
            "metadata.extra_json: must be a JSON object (the metadata fields ObjectMeta does not "
            "model), got null\n"
            "spec.slotsPerWorker: not a field of PyTorchJob (only of MPIJob)\n"
            "spec.pytorchReplicaSpecs.Worker.template: must be an object (a core/v1 "
            "PodTemplateSpec), got a list");
}

// Normalised as a manifest is: replica-type keys in CamelCase, JSON as the decoder writes it.
TEST(RecodeJobTest, NormalisesAsTheDecoderDoes) {
  TrainingJob job = ValidJob();
  auto* specs = job.mutable_spec()->mutable_replica_specs();
  ReplicaSpec worker = specs->at("Worker");
  specs->erase("Worker");
  worker.set_template_json(R"( { "spec" : { "containers" : [ ] } } )");
  (*specs)["worker"] = worker;
  auto recoded = RecodeJob(job);
  ASSERT_TRUE(recoded.ok()) << recoded.status();
  ASSERT_EQ(recoded->spec().replica_specs().count("Worker"), 1u);
  EXPECT_EQ(recoded->spec().replica_specs().at("Worker").template_json(),
            R"({"spec":{"containers":[]}})");
}

}  // namespace
}  // namespace coach::api::v1::codec
