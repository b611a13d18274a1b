// Job history with a history store, end to end on the local backend (docs/history.md): the
// operator keeps logs and deleted jobs' records in a real SeaweedFS S3 store
// (integrations/s3/testing/seaweedfs_server.h). A job deleted through the API, and one deleted by
// its TTL, are listed by ListJobHistories with their timeline, and their logs are read back by uid
// from the store. Tagged "s3": `--test_tag_filters=-s3` skips it; without weed it skips, and
// fails under CI=true.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "e2e/local/history_job.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "integrations/s3/object_store.h"
#include "integrations/s3/s3_object_store.h"
#include "integrations/s3/testing/seaweedfs_server.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::JobHistory;
using api::v1::TrainingJob;

// With a SeaweedFS history store (one per suite; each test its own prefix).
class HistoryStoreTest : public RestartingJobTest {
 protected:
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    if (server_ == nullptr) {
      absl::StatusOr<std::unique_ptr<s3::testing::SeaweedFsServer>> started =
          s3::testing::SeaweedFsServer::Start();
      if (!started.ok()) {
        if (absl::IsNotFound(started.status()) && !s3::testing::InCi()) {
          GTEST_SKIP() << started.status().message();
        }
        FAIL() << started.status();
      }
      server_ = std::move(started).value();
    }
    const s3::S3Options& s3 = server_->options();
    prefix_ = absl::StrCat(::testing::UnitTest::GetInstance()->current_test_info()->name(), "/");
    OperatorOptions options;
    options.extra_args = {
        "--history-s3-endpoint=" + s3.endpoint,
        "--history-s3-bucket=" + s3.bucket,
        "--history-s3-region=" + s3.region,
        "--history-s3-prefix=" + prefix_,
    };
    options.extra_env = {
        "AWS_ACCESS_KEY_ID=" + s3.access_key_id,
        "AWS_SECRET_ACCESS_KEY=" + s3.secret_access_key,
    };
    StartOperator(options);
  }

  // The keys under this test's prefix in the bucket.
  std::vector<std::string> Keys() {
    absl::StatusOr<std::unique_ptr<s3::ObjectStore>> store =
        s3::MakeS3ObjectStore(server_->options());
    if (!store.ok()) return {store.status().ToString()};
    absl::StatusOr<s3::ListResult> listed = (*store)->List(prefix_, 1000);
    if (!listed.ok()) return {listed.status().ToString()};
    std::vector<std::string> keys;
    for (const s3::ObjectInfo& o : listed->objects) keys.push_back(o.key);
    return keys;
  }

  static std::unique_ptr<s3::testing::SeaweedFsServer> server_;
  std::string prefix_;
};

std::unique_ptr<s3::testing::SeaweedFsServer> HistoryStoreTest::server_;

// DeleteJob of a finished job that restarted once: ListJobHistories finds its record with the
// timeline, and GetJobLogs by uid reads every attempt's logs from the store (the local backend's
// copies went with the job).
TEST_F(HistoryStoreTest, DeletedJobKeepsItsTimelineAndLogsInTheStore) {
  const TrainingJob job = RunRestartingJob("gone", /*failing=*/1);
  ASSERT_FALSE(HasFailure());
  const std::string uid = job.metadata().uid();
  ASSERT_FALSE(uid.empty());
  const absl::Time deleting = absl::Now();
  ASSERT_TRUE(op_->client().DeleteJob(kNs, "gone").ok());
  ASSERT_TRUE(op_->WaitJobGone("gone").ok());
  EXPECT_TRUE(op_->WaitNoProcesses().empty()) << DescribeProcesses(op_->Processes());

  absl::StatusOr<JobHistory> history = WaitHistory("gone", uid);
  ASSERT_TRUE(history.ok()) << history.status();
  std::fprintf(stderr, "[history_test] record listed %s after DeleteJob\n",
               absl::FormatDuration(absl::Now() - deleting).c_str());
  EXPECT_EQ(history->deleted_by(), "deleted");
  EXPECT_EQ(history->job().metadata().name(), "gone");
  EXPECT_EQ(history->job().metadata().namespace_(), kNs);
  const absl::Time deleted_time = absl::FromUnixSeconds(history->deleted_time().seconds());
  EXPECT_GE(deleted_time, deleting - absl::Seconds(2));
  EXPECT_LE(deleted_time, absl::Now() + absl::Seconds(2));
  EXPECT_TRUE(sdk::IsJobSucceeded(history->job())) << history->job().status().ShortDebugString();
  ExpectTimeline(history->job(), 1);
  std::set<std::string> logs(history->logs().begin(), history->logs().end());
  std::set<std::string> want;
  for (int attempt : {0, 1}) {
    for (const std::string replica : kHistoryReplicas) {
      want.insert(absl::StrCat("attempt-", attempt, "/", replica));
    }
  }
  EXPECT_EQ(logs, want);
  EXPECT_FALSE(PathExists(absl::StrCat(op_->state_dir(), "/replicas/default/gone")));

  sdk::TrainingClient& client = op_->client();
  for (size_t r = 0; r < std::size(kHistoryReplicas); ++r) {
    ExpectAttemptLog(client, "gone", r, 0, "kept/store", uid);
    ExpectAttemptLog(client, "gone", r, 1, "kept/store", uid);
  }
  // No attempt: the last one.
  const LogRead last = ReadLogs(client, "gone", "", std::nullopt, uid);
  ASSERT_TRUE(last.status.ok()) << last.status;
  EXPECT_EQ(last.attempts, std::set<int>{1});
  EXPECT_EQ(last.sources, (std::map<std::string, std::string>{{"master-0", "kept/store"},
                                                              {"worker-0", "kept/store"},
                                                              {"worker-1", "kept/store"}}));
  EXPECT_TRUE(absl::StrContains(last.text, "master done\n")) << last.text;
  EXPECT_TRUE(absl::IsNotFound(ReadLogs(client, "gone", "", 2, uid).status));
  EXPECT_TRUE(absl::IsNotFound(ReadLogs(client, "gone", "", 0, "no-such-uid").status));

  // Where docs/history.md says they are.
  const std::vector<std::string> keys = Keys();
  const std::set<std::string> key_set(keys.begin(), keys.end());
  EXPECT_EQ(key_set.count(absl::StrCat(prefix_, "jobs/default/gone/", uid, ".json")), 1u)
      << absl::StrJoin(keys, "\n");
  for (const std::string& kept : want) {
    EXPECT_EQ(key_set.count(absl::StrCat(prefix_, "logs/default/gone/", uid, "/", kept, ".log")),
              1u)
        << kept << "\n"
        << absl::StrJoin(keys, "\n");
  }

  // The CLI.
  const CliResult deleted = op_->Cli({"history", "--deleted"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_TRUE(absl::StrContains(deleted.out, uid)) << deleted.out;
  EXPECT_TRUE(absl::StrContains(deleted.out, "gone")) << deleted.out;
  EXPECT_TRUE(absl::StrContains(deleted.out, "deleted")) << deleted.out;
  const CliResult timeline = op_->Cli({"history", "--deleted", "gone", "--uid", uid});
  ASSERT_EQ(timeline.exit_code, 0) << timeline.err;
  ExpectAttemptRows(timeline.out, 1);
  const CliResult logs_cli =
      op_->Cli({"logs", "gone", "--uid", uid, "--attempt", "0", "--replica", "worker-1"});
  ASSERT_EQ(logs_cli.exit_code, 0) << logs_cli.err;
  EXPECT_TRUE(absl::StrContains(logs_cli.out, Hello(2, 0))) << logs_cli.out;
  EXPECT_TRUE(absl::StrContains(logs_cli.err, "# worker-1, attempt 0: kept log (store)\n"))
      << logs_cli.err;
}

// ttlSecondsAfterFinished deletes a finished job; its record says so.
TEST_F(HistoryStoreTest, JobDeletedByItsTtlIsKeptAsDeletedByTtl) {
  const std::string uid = RunTtlJob("ttl", 2);
  ASSERT_FALSE(uid.empty());
  absl::StatusOr<JobHistory> history = WaitHistory("ttl", uid);
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(history->deleted_by(), "ttl");
  EXPECT_TRUE(sdk::IsJobSucceeded(history->job())) << history->job().status().ShortDebugString();
  const LogRead read = ReadLogs(op_->client(), "ttl", "", std::nullopt, uid);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sources, (std::map<std::string, std::string>{{"master-0", "kept/store"}}));
  EXPECT_EQ(read.text, "ttl says bye\n");

  const CliResult deleted = op_->Cli({"history", "--deleted", "ttl"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  const CliResult listed = op_->Cli({"history", "--deleted"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(absl::StrContains(listed.out, uid)) << listed.out;
  EXPECT_TRUE(absl::StrContains(listed.out, "ttl")) << listed.out;
}

}  // namespace
}  // namespace coach::e2e
