#include "operator/backend/local/local_layout.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "common/testing/test_dir.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {
namespace {

const store::JobKey kJob{"ns", "job"};

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class LocalLayoutTest : public ::testing::Test {
 protected:
  const std::string dir_ = ::coach::testing::FreshTestDir("local_layout");
  const LocalLayout layout_{dir_};
};

TEST(LocalLayoutPathsTest, EveryFileOfAPodIsInItsJobsOneDirectory) {
  const LocalLayout layout("/state");
  EXPECT_EQ(layout.ReplicaFiles(kJob, "job-worker-0"), "/state/replicas/ns/job/job-worker-0.");
  EXPECT_EQ(layout.LogPath(kJob, "job-worker-0").value_or(""),
            "/state/replicas/ns/job/job-worker-0.log");
  EXPECT_EQ(layout.RestartCountPath(kJob, "job-worker-0"),
            "/state/replicas/ns/job/job-worker-0.restart_count");
  EXPECT_EQ(layout.ConfigMapDir(kJob, "job-config").value_or(""),
            "/state/configmaps/ns/job/job-config");
  EXPECT_EQ(layout.MlflowBindingDir(), "/state/mlflow-python");
}

TEST(LocalLayoutPathsTest, NamesThatLeaveTheirDirectoryAreRefused) {
  const LocalLayout layout("/state");
  EXPECT_EQ(layout.LogPath({"..", "job"}, "r").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(layout.LogPath({"ns", "a/b"}, "r").ok());
  EXPECT_FALSE(layout.LogPath(kJob, "").ok());
  EXPECT_EQ(layout.ConfigMapDir(kJob, "../x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(layout.ConfigMapDir({"ns", ".."}, "cm").ok());
}

TEST_F(LocalLayoutTest, CreateLogMakesAnEmptyLogAndKeepsAnExistingOne) {
  ASSERT_TRUE(layout_.CreateLog(kJob, "p").ok());
  const std::string log = layout_.LogPath(kJob, "p").value();
  EXPECT_EQ(ReadFile(log).value_or("missing"), "");
  Write(log, "kept\n");
  ASSERT_TRUE(layout_.CreateLog(kJob, "p").ok());
  EXPECT_EQ(ReadFile(log).value_or(""), "kept\n");
}

TEST_F(LocalLayoutTest, RestartCountIsCarriedOverAndZeroWhenNoneWas) {
  EXPECT_EQ(layout_.CarriedRestartCount(kJob, "p"), 0);
  ASSERT_TRUE(layout_.CarryRestartCount(kJob, "p", 3).ok());
  EXPECT_EQ(layout_.CarriedRestartCount(kJob, "p"), 3);
  EXPECT_EQ(layout_.CarriedRestartCount(kJob, "other"), 0);
  Write(layout_.RestartCountPath(kJob, "p"), "not a number");
  EXPECT_EQ(layout_.CarriedRestartCount(kJob, "p"), 0);
}

TEST_F(LocalLayoutTest, RemovingTheEndedAttemptKeepsTheLogAndTheRestartCount) {
  EXPECT_TRUE(layout_.RemoveEndedAttemptFiles(kJob, "p").ok()) << "no job directory yet";
  ASSERT_TRUE(layout_.CarryRestartCount(kJob, "p", 1).ok());
  ASSERT_TRUE(layout_.CreateLog(kJob, "p").ok());
  const std::string files = layout_.ReplicaFiles(kJob, "p");
  Write(files + "exit", "{}");
  Write(files + "process", "{}");

  ASSERT_TRUE(layout_.RemoveEndedAttemptFiles(kJob, "p").ok());
  EXPECT_FALSE(Exists(files + "exit"));
  EXPECT_FALSE(Exists(files + "process"));
  EXPECT_TRUE(Exists(files + "log"));
  EXPECT_EQ(layout_.CarriedRestartCount(kJob, "p"), 1);
  EXPECT_TRUE(layout_.RemoveEndedAttemptFiles(kJob, "p").ok()) << "idempotent";
}

TEST_F(LocalLayoutTest, ConfigMapDataIsOneFileAKeyAndUnsafeKeysAreSkipped) {
  ASSERT_TRUE(layout_.WriteConfigMap(kJob, "cm", {{"hostfile", "a\nb\n"}, {"../evil", "x"}}).ok());
  const std::string dir = layout_.ConfigMapDir(kJob, "cm").value();
  EXPECT_EQ(ReadFile(dir + "/hostfile").value_or(""), "a\nb\n");
  EXPECT_FALSE(Exists(dir + "/../evil"));
  EXPECT_EQ(layout_.WriteConfigMap(kJob, "a/b", {{"k", "v"}}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(LocalLayoutTest, RemoveJobRemovesOnlyThatJobsDirectories) {
  const store::JobKey other{"ns", "other"};
  for (const store::JobKey& job : {kJob, other}) {
    ASSERT_TRUE(layout_.CreateLog(job, "p").ok());
    ASSERT_TRUE(layout_.WriteConfigMap(job, "cm", {{"k", "v"}}).ok());
  }
  ASSERT_TRUE(layout_.RemoveJob(kJob).ok());
  EXPECT_FALSE(Exists(dir_ + "/replicas/ns/job"));
  EXPECT_FALSE(Exists(dir_ + "/configmaps/ns/job"));
  EXPECT_TRUE(Exists(layout_.LogPath(other, "p").value()));
  EXPECT_TRUE(Exists(layout_.ConfigMapDir(other, "cm").value()));
  EXPECT_TRUE(layout_.RemoveJob(kJob).ok()) << "idempotent";
  // Unguarded, this would remove replicas/ and configmaps/ whole.
  EXPECT_TRUE(layout_.RemoveJob({"ns", ".."}).ok());
  EXPECT_TRUE(Exists(dir_ + "/replicas/ns/other"));
}

}  // namespace
}  // namespace coach::backend::local
