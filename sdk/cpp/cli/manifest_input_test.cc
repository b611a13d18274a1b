#include "sdk/cpp/cli/manifest_input.h"

#include <fstream>
#include <string>

#include "common/testing/test_dir.h"
#include "gtest/gtest.h"

namespace coach::cli {
namespace {

TEST(ManifestInputTest, ADirectoryIsRefusedNamingIt) {
  absl::StatusOr<std::string> read = ReadInput(::coach::testing::FreshTestDir("manifest_input"));
  ASSERT_TRUE(absl::IsInvalidArgument(read.status())) << read.status();
  EXPECT_NE(read.status().message().find("is a directory"), std::string::npos);
}

TEST(ManifestInputTest, AnEndlessFileStopsAtTheBound) {
  absl::StatusOr<std::string> read = ReadInput("/dev/zero");
  ASSERT_TRUE(absl::IsInvalidArgument(read.status())) << read.status();
  EXPECT_NE(read.status().message().find("/dev/zero: longer than 8388608 bytes"), std::string::npos)
      << read.status();
}

TEST(ManifestInputTest, MissingAndOrdinaryFiles) {
  EXPECT_TRUE(absl::IsNotFound(ReadInput("/nonexistent/job.yaml").status()));
  const std::string path = ::coach::testing::FreshTestDir("manifest_input") + "/job.yaml";
  std::ofstream(path) << "kind: PyTorchJob\n";
  absl::StatusOr<std::string> read = ReadInput(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "kind: PyTorchJob\n");
}

// Documents are counted from 1, as the decoder counts them.
TEST(ManifestInputTest, ErrorsNameDocumentsFromOne) {
  const std::string job = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: a, namespace: x}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: i}]}}}
)";
  absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs = LoadJobs(job + "---\n" + job, "other");
  ASSERT_TRUE(absl::IsInvalidArgument(jobs.status())) << jobs.status();
  EXPECT_NE(jobs.status().message().find("document 1: metadata.namespace"), std::string::npos)
      << jobs.status();
  EXPECT_NE(jobs.status().message().find("document 2: metadata.namespace"), std::string::npos)
      << jobs.status();
}

}  // namespace
}  // namespace coach::cli
