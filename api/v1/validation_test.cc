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

}  // namespace
}  // namespace coach::api::v1
