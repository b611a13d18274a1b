#include "operator/backend/local/local_layout.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

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

TEST_F(LocalLayoutTest, RestartsAndTheAttemptAreCarriedOverAndNoneWhenNoneWas) {
  EXPECT_EQ(layout_.CarriedOver(kJob, "p").restarts, 0);
  EXPECT_FALSE(layout_.CarriedOver(kJob, "p").attempt.has_value());
  ASSERT_TRUE(layout_.CarryOver(kJob, "p", {3, 2}).ok());
  EXPECT_EQ(layout_.CarriedOver(kJob, "p").restarts, 3);
  EXPECT_EQ(layout_.CarriedOver(kJob, "p").attempt, 2);
  EXPECT_EQ(layout_.CarriedOver(kJob, "other").restarts, 0);
  ASSERT_TRUE(layout_.CarryOver(kJob, "q", {1, std::nullopt}).ok());
  auto all = layout_.CarriedOverAll(kJob);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at("p").attempt, 2);
  EXPECT_FALSE(all->at("q").attempt.has_value());
  // A file written before attempts were kept: its restarts, no attempt.
  Write(layout_.RestartCountPath(kJob, "p"), "4");
  EXPECT_EQ(layout_.CarriedOver(kJob, "p").restarts, 4);
  EXPECT_FALSE(layout_.CarriedOver(kJob, "p").attempt.has_value());
  Write(layout_.RestartCountPath(kJob, "p"), "not a number");
  EXPECT_EQ(layout_.CarriedOver(kJob, "p").restarts, 0);
}

TEST_F(LocalLayoutTest, RemovingTheEndedAttemptKeepsTheLogAndTheRestartCount) {
  EXPECT_TRUE(layout_.RemoveEndedAttemptFiles(kJob, "p").ok()) << "no job directory yet";
  ASSERT_TRUE(layout_.CarryOver(kJob, "p", {1, 0}).ok());
  ASSERT_TRUE(layout_.CreateLog(kJob, "p").ok());
  const std::string files = layout_.ReplicaFiles(kJob, "p");
  Write(files + "exit", "{}");
  Write(files + "process", "{}");

  ASSERT_TRUE(layout_.RemoveEndedAttemptFiles(kJob, "p").ok());
  EXPECT_FALSE(Exists(files + "exit"));
  EXPECT_FALSE(Exists(files + "process"));
  EXPECT_TRUE(Exists(files + "log"));
  EXPECT_EQ(layout_.CarriedOver(kJob, "p").restarts, 1);
  EXPECT_TRUE(layout_.RemoveEndedAttemptFiles(kJob, "p").ok()) << "idempotent";
}

TEST_F(LocalLayoutTest, AnEndedAttemptsLogMovesToItsDirectoryOnceAndNeverReplacesAKeptOne) {
  EXPECT_EQ(layout_.AttemptLogDir(kJob, 3).value_or(""), dir_ + "/replicas/ns/job/attempts/3");
  EXPECT_FALSE(layout_.AttemptLogDir(kJob, -1).ok());
  EXPECT_FALSE(layout_.AttemptLogDir({"ns", ".."}, 0).ok());
  EXPECT_FALSE(layout_.KeepAttemptLog(kJob, "../p", 0).ok());
  EXPECT_TRUE(layout_.KeepAttemptLog(kJob, "p", 0).ok()) << "nothing to move";

  const std::string log = layout_.LogPath(kJob, "p").value();
  ASSERT_TRUE(layout_.CreateLog(kJob, "p").ok());
  Write(log, "new\n");
  Write(log + ".1", "old\n");
  ASSERT_TRUE(layout_.KeepAttemptLog(kJob, "p", 0).ok());
  const std::string kept = layout_.AttemptLogDir(kJob, 0).value() + "/p.log";
  EXPECT_EQ(ReadFile(kept).value_or(""), "new\n");
  EXPECT_EQ(ReadFile(kept + ".1").value_or(""), "old\n");
  EXPECT_FALSE(Exists(log));
  EXPECT_FALSE(Exists(log + ".1"));
  EXPECT_EQ(layout_.KeptLogPods(kJob, 0).value_or(std::vector<std::string>{}),
            std::vector<std::string>{"p"});
  EXPECT_TRUE(layout_.KeptLogPods(kJob, 1).value_or(std::vector<std::string>{"x"}).empty());

  // The next attempt's start failed before its process ran: its log stays live.
  Write(log, "failed start\n");
  ASSERT_TRUE(layout_.KeepAttemptLog(kJob, "p", 0).ok());
  EXPECT_EQ(ReadFile(kept).value_or(""), "new\n");
  EXPECT_EQ(ReadFile(log).value_or(""), "failed start\n");
}

TEST_F(LocalLayoutTest, TrimmingKeepsAttemptZeroAndTheLatest) {
  const int last = kKeptAttempts + 5;
  for (int a = 0; a <= last; ++a) {
    ASSERT_TRUE(layout_.CreateLog(kJob, "p").ok());
    ASSERT_TRUE(layout_.KeepAttemptLog(kJob, "p", a).ok());
  }
  ASSERT_TRUE(MakeDirs(dir_ + "/replicas/ns/job/attempts/not-an-attempt").ok());
  ASSERT_TRUE(MakeDirs(dir_ + "/replicas/ns/job/attempts/007").ok());
  ASSERT_TRUE(layout_.TrimKeptAttempts(kJob).ok());
  std::vector<int> want = {0};
  for (int a = last - kKeptAttempts + 2; a <= last; ++a) want.push_back(a);
  ASSERT_EQ(want.size(), static_cast<size_t>(kKeptAttempts));
  EXPECT_EQ(layout_.KeptAttempts(kJob).value_or(std::vector<int>{}), want);
  EXPECT_TRUE(Exists(dir_ + "/replicas/ns/job/attempts/not-an-attempt")) << "not ours: left";
  EXPECT_TRUE(Exists(dir_ + "/replicas/ns/job/attempts/007"));
  ASSERT_TRUE(layout_.TrimKeptAttempts(kJob).ok());
  EXPECT_EQ(layout_.KeptAttempts(kJob).value_or(std::vector<int>{}), want) << "idempotent";

  ASSERT_TRUE(layout_.RemoveJob(kJob).ok());
  EXPECT_TRUE(layout_.KeptAttempts(kJob).value_or(std::vector<int>{1}).empty());
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
