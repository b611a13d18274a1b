#include "api/v1/validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/defaults.h"

namespace coach::api::v1 {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// What coach does on admission: parse, default, validate. "" when everything is fine.
std::string Admit(const std::string& text) {
  auto jobs = codec::ParseManifests(text);
  if (!jobs.ok()) return std::string(jobs.status().message());
  std::string errors;
  for (TrainingJob& job : *jobs) {
    SetDefaults(&job);
    absl::Status status = ValidateJob(job);
    if (!status.ok()) errors += std::string(status.message()) + "\n";
  }
  return errors;
}

TEST(ValidationTest, ValidExamplesPass) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("api/v1/testdata/valid")) {
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(Admit(ReadFile(entry.path())), "");
    ++count;
  }
  EXPECT_EQ(count, 6);
}

TEST(ValidationTest, InvalidCorpus) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator("api/v1/testdata/invalid")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 30u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    std::string text = ReadFile(file);
    const std::string marker = "# expect: ";
    ASSERT_TRUE(absl::StartsWith(text, marker)) << "first line must be '# expect: ...'";
    std::string expect = text.substr(marker.size(), text.find('\n') - marker.size());
    ASSERT_FALSE(expect.empty());
    std::string errors = Admit(text);
    EXPECT_FALSE(errors.empty()) << "accepted";
    EXPECT_NE(errors.find(expect), std::string::npos) << "expected: " << expect << "\ngot:\n"
                                                      << errors;
  }
}

TrainingJob ValidPyTorch() {
  auto jobs = codec::ParseManifests(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: i}]}}}
)");
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  TrainingJob job = jobs->front();
  SetDefaults(&job);
  return job;
}

TEST(ValidationTest, ReportsEveryProblemWithPaths) {
  TrainingJob job = ValidPyTorch();
  EXPECT_TRUE(Validate(job).empty());
  job.mutable_metadata()->set_name("Bad");
  (*job.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(-1);
  job.mutable_spec()->mutable_run_policy()->set_backoff_limit(-2);
  std::vector<FieldError> errors = Validate(job);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].path, "metadata.name");
  EXPECT_EQ(errors[1],
            (FieldError{"spec.pytorchReplicaSpecs.Worker.replicas", "must be >= 0, got -1"}));
  EXPECT_EQ(errors[2], (FieldError{"spec.runPolicy.backoffLimit", "must be >= 0, got -2"}));
  absl::Status status = ValidateJob(job);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("spec.runPolicy.backoffLimit: must be >= 0, got -2"),
            std::string::npos);
}

// A 3.5 MiB manifest passed gRPC's 4 MiB limit and was stored (e2e/local:grpc_abuse_test);
// Kubernetes stores nothing over 1.5 MiB.
TEST(ValidationTest, JobLargerThanKubernetesStoresIsRefused) {
  TrainingJob job = ValidPyTorch();
  std::string& tmpl =
      *(*job.mutable_spec()->mutable_replica_specs())["Worker"].mutable_template_json();
  const std::string small = tmpl;
  tmpl.insert(tmpl.size() - 1, ",\"x\":\"" + std::string(kMaxJobBytes, 'x') + "\"");
  std::vector<FieldError> errors = Validate(job);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "spec.pytorchReplicaSpecs.Worker.template");
  EXPECT_NE(errors[0].message.find("more than the 1572864"), std::string::npos)
      << errors[0].message;
  tmpl = small;
  tmpl.insert(tmpl.size() - 1, ",\"x\":\"" + std::string(kMaxJobBytes - 1024, 'x') + "\"");
  EXPECT_TRUE(Validate(job).empty());
}

TEST(ValidationTest, UnknownKindAndReplicaTypeFromCode) {
  TrainingJob job = ValidPyTorch();
  (*job.mutable_spec()->mutable_replica_specs())["Chief"];
  std::vector<FieldError> errors = Validate(job);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].path, "spec.pytorchReplicaSpecs.Chief");
  job.set_kind(JOB_KIND_UNSPECIFIED);
  errors = Validate(job);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "kind");
}

TEST(ValidationTest, NprocPerNodeValues) {
  for (const char* ok : {"auto", "cpu", "gpu", "1", "8"}) {
    TrainingJob job = ValidPyTorch();
    job.mutable_spec()->set_nproc_per_node(ok);
    EXPECT_TRUE(Validate(job).empty()) << ok;
  }
  for (const char* bad : {"0", "-1", "GPU", "", "2x", "99999999999"}) {
    TrainingJob job = ValidPyTorch();
    job.mutable_spec()->set_nproc_per_node(bad);
    std::vector<FieldError> errors = Validate(job);
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_EQ(errors[0].path, "spec.nprocPerNode");
  }
}

TEST(ValidationTest, GangMinAvailableCountsDefaultedReplicas) {
  TrainingJob job = ValidPyTorch();
  auto* sp = job.mutable_spec()->mutable_run_policy()->mutable_scheduling_policy();
  sp->set_min_available(2);
  EXPECT_TRUE(Validate(job).empty());
  sp->set_min_available(3);
  ASSERT_EQ(Validate(job).size(), 1u);
  (*sp->mutable_min_resources())["cpu"] = "500m";
  (*sp->mutable_min_resources())["memory"] = "1.5Gi";
  (*sp->mutable_min_resources())["nvidia.com/gpu"] = "1e3";
  sp->set_min_available(1);
  EXPECT_TRUE(Validate(job).empty());
}

// Each case a metrics list and the one problem it has ("" none): what reaches an HPA is
// held to what the API server requires of one, within the bounds.
TEST(ValidationTest, ElasticMetrics) {
  const std::string cpu =
      R"({"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization",)"
      R"("averageUtilization":80}}})";
  std::string seventeen = "[";
  for (int i = 0; i < 17; ++i) seventeen += (i == 0 ? "" : ",") + cpu;
  seventeen += "]";
  struct Case {
    std::string metrics;
    FieldError want;
  };
  const std::string m = "spec.elasticPolicy.metrics";
  const std::vector<Case> cases = {
      {"[" + cpu + "]", {}},
      {"[]", {}},
      {R"([{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue"}}}])",
       {}},
      {R"([{"type":"External","external":{}},{"type":"Object","object":{}},)"
       R"({"type":"ContainerResource","containerResource":{}}])",
       {}},
      {"{}", {m, "must be a JSON array of autoscaling/v2 MetricSpecs"}},
      {"[", {m, "must be a JSON array of autoscaling/v2 MetricSpecs"}},
      {"[5]", {m + "[0]", "must be an object (an autoscaling/v2 MetricSpec), got number"}},
      {"[" + cpu + ",{}]",
       {m + "[1].type", "required: one of ContainerResource, External, Object, Pods, Resource"}},
      {R"([{"type":7}])",
       {m + "[0].type", "required: one of ContainerResource, External, Object, Pods, Resource"}},
      {R"([{"type":"resource","resource":{}}])",
       {m + "[0].type",
        R"(must be one of "ContainerResource", "External", "Object", "Pods", "Resource", )"
        R"(got "resource")"}},
      {R"([{"type":"Pods","resource":{}}])",
       {m + "[0].pods", "required when type is Pods: an object"}},
      {R"([{"type":"External","external":null}])",
       {m + "[0].external", "required when type is External: an object"}},
      {seventeen, {m, "must have at most 16 entries, got 17"}},
      {"[" + std::string(kMaxElasticMetricsBytes, ' ') + "]",
       {m, "must be at most 16384 bytes of JSON, got 16386"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.metrics.substr(0, 120));
    TrainingJob job = ValidPyTorch();
    job.mutable_spec()->mutable_elastic_policy()->set_metrics_json(c.metrics);
    SetDefaults(&job);
    std::vector<FieldError> errors = Validate(job);
    if (c.want.path.empty()) {
      EXPECT_TRUE(errors.empty()) << FormatFieldError(errors[0]);
    } else {
      ASSERT_EQ(errors.size(), 1u);
      EXPECT_EQ(errors[0], c.want) << FormatFieldError(errors[0]);
    }
  }
}

// A PaddleJob's metrics reach no HPA (upstream keeps them unused): only the shape and bounds.
TEST(ValidationTest, PaddleElasticMetricsOnlyBounded) {
  ElasticPolicy policy;
  policy.set_metrics_json(R"([{"type":"Memory"}])");
  EXPECT_TRUE(ValidateElasticMetrics(PADDLE_JOB, policy).empty());
  EXPECT_EQ(ValidateElasticMetrics(PYTORCH_JOB, policy).size(), 1u);
  policy.set_metrics_json(R"(["x"])");
  EXPECT_EQ(ValidateElasticMetrics(PADDLE_JOB, policy).size(), 1u);
}

}  // namespace
}  // namespace coach::api::v1
