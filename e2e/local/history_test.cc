// Job history end to end on the local backend (docs/history.md): a PyTorchJob (Master + 2
// Workers) restarted as a whole twice after worker-1 SIGKILLs itself, its attempt timeline
// (status.coach.attempts, `coach describe`, `coach history`) and every attempt's logs through the
// SDK and `coach logs --attempt`; without a history store, a deleted job leaves no history.
// history_store_test.cc runs the same job against a history store.

#include <cstddef>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "e2e/local/history_job.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

class HistoryTest : public RestartingJobTest {
 protected:
  void SetUp() override { StartOperator(); }
};

TEST_F(HistoryTest, EveryAttemptKeepsItsTimelineAndLogs) {
  const absl::Time begin = absl::Now();
  const TrainingJob job = RunRestartingJob("ddp", /*failing=*/2);
  ASSERT_FALSE(HasFailure());
  std::fprintf(stderr, "[history_test] three attempts in %s\n",
               absl::FormatDuration(absl::Now() - begin).c_str());
  EXPECT_EQ(job.status().coach().attempt(), 2);
  EXPECT_EQ(job.status().coach().restarts(), 2);
  ExpectTimeline(job, 2);

  sdk::TrainingClient& client = op_->client();
  for (size_t r = 0; r < std::size(kHistoryReplicas); ++r) {
    // The ended attempts from the local backend's state dir; the last one's live: its
    // processes ended, the Succeeded job's pods stay (cleanPodPolicy None).
    ExpectAttemptLog(client, "ddp", r, 0, "kept/local");
    ExpectAttemptLog(client, "ddp", r, 1, "kept/local");
    ExpectAttemptLog(client, "ddp", r, 2, "live");
    // Where docs/local.md says the ended attempts are kept.
    for (int attempt : {0, 1}) {
      const std::string kept = absl::StrCat(op_->state_dir(), "/replicas/default/ddp/attempts/",
                                            attempt, "/ddp-", kHistoryReplicas[r], ".log");
      EXPECT_TRUE(absl::StrContains(ReadFileOrEmpty(kept), Hello(static_cast<int>(r), attempt)))
          << kept;
    }
  }
  // Unset: the current attempt.
  const LogRead current = ReadLogs(client, "ddp", "worker-1", std::nullopt);
  ASSERT_TRUE(current.status.ok()) << current.status;
  EXPECT_EQ(current.sources, (std::map<std::string, std::string>{{"worker-1", "live"}}));
  EXPECT_EQ(current.attempts, std::set<int>{2});
  EXPECT_TRUE(absl::StrContains(current.text, Hello(2, 2))) << current.text;
  // Every replica of an ended attempt at once.
  const LogRead all = ReadLogs(client, "ddp", "", 1);
  ASSERT_TRUE(all.status.ok()) << all.status;
  EXPECT_EQ(all.sources, (std::map<std::string, std::string>{{"master-0", "kept/local"},
                                                             {"worker-0", "kept/local"},
                                                             {"worker-1", "kept/local"}}));
  EXPECT_EQ(all.attempts, std::set<int>{1});
  for (int rank : {0, 1, 2}) EXPECT_TRUE(absl::StrContains(all.text, Hello(rank, 1))) << all.text;
  // An attempt the job never reached; one the API does not take.
  EXPECT_TRUE(absl::IsNotFound(ReadLogs(client, "ddp", "worker-1", 3).status))
      << ReadLogs(client, "ddp", "worker-1", 3).status;
  EXPECT_TRUE(absl::IsNotFound(ReadLogs(client, "ddp", "", 3).status))
      << ReadLogs(client, "ddp", "", 3).status;
  EXPECT_TRUE(absl::IsInvalidArgument(ReadLogs(client, "ddp", "", -1).status))
      << ReadLogs(client, "ddp", "", -1).status;

  // The CLI.
  const CliResult describe = op_->Cli({"describe", "ddp"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_TRUE(absl::StrContains(describe.out, "Attempts:")) << describe.out;
  ExpectAttemptRows(describe.out.substr(describe.out.find("Attempts:")), 2);
  const CliResult history = op_->Cli({"history", "ddp"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  ExpectAttemptRows(history.out, 2);

  const CliResult kept = op_->Cli({"logs", "ddp", "--replica", "worker-1", "--attempt", "0"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_TRUE(absl::StrContains(kept.out, Hello(2, 0))) << kept.out;
  EXPECT_FALSE(absl::StrContains(kept.out, Hello(2, 1))) << kept.out;
  EXPECT_TRUE(absl::StrContains(kept.err, "# worker-1, attempt 0: kept log (local)\n")) << kept.err;
  const CliResult every = op_->Cli({"logs", "ddp", "--attempt", "1"});
  ASSERT_EQ(every.exit_code, 0) << every.err;
  for (int rank : {0, 1, 2}) EXPECT_TRUE(absl::StrContains(every.out, Hello(rank, 1))) << every.out;
  for (const std::string replica : kHistoryReplicas) {
    EXPECT_TRUE(
        absl::StrContains(every.err, absl::StrCat("# ", replica, ", attempt 1: kept log (local)")))
        << every.err;
  }
  const CliResult live = op_->Cli({"logs", "ddp", "--replica", "master-0"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_TRUE(absl::StrContains(live.out, Hello(0, 2))) << live.out;
  EXPECT_TRUE(absl::StrContains(live.out, "master done\n")) << live.out;
  EXPECT_FALSE(absl::StrContains(live.err, "kept log")) << live.err;
  const CliResult beyond = op_->Cli({"logs", "ddp", "--attempt", "3"});
  EXPECT_EQ(beyond.exit_code, 3) << beyond.out << beyond.err;
  const CliResult negative = op_->Cli({"logs", "ddp", "--attempt", "-1"});
  EXPECT_EQ(negative.exit_code, 2) << negative.out << negative.err;
  EXPECT_TRUE(absl::StrContains(negative.err, "--attempt")) << negative.err;
  EXPECT_TRUE(negative.out.empty()) << negative.out;

  EXPECT_TRUE(op_->WaitNoProcesses().empty()) << DescribeProcesses(op_->Processes());
}

// Without a history store a deleted job leaves nothing: its kept logs go with it and there is
// no history to list.
TEST_F(HistoryTest, WithoutAStoreADeletedJobLeavesNoHistory) {
  const TrainingJob job = RunRestartingJob("short", /*failing=*/1);
  ASSERT_FALSE(HasFailure());
  ExpectTimeline(job, 1);
  const std::string kept = absl::StrCat(op_->state_dir(), "/replicas/default/short/attempts/0");
  EXPECT_TRUE(PathExists(kept)) << kept;
  ASSERT_TRUE(op_->client().DeleteJob(kNs, "short").ok());
  ASSERT_TRUE(op_->WaitJobGone("short").ok());
  EXPECT_TRUE(coach::testing::Eventually([&] { return !PathExists(kept); }, absl::Seconds(30)))
      << kept;

  absl::StatusOr<api::v1::ListJobHistoriesResponse> histories =
      op_->client().ListJobHistories(kNs, "short");
  EXPECT_TRUE(absl::IsFailedPrecondition(histories.status())) << histories.status();
  const LogRead by_uid = ReadLogs(op_->client(), "short", "", std::nullopt, job.metadata().uid());
  EXPECT_TRUE(absl::IsFailedPrecondition(by_uid.status)) << by_uid.status << by_uid.text;
  // FailedPrecondition is exit 1 (sdk/cpp/cli/exit_codes.h), with the reason.
  const CliResult deleted = op_->Cli({"history", "--deleted"});
  EXPECT_EQ(deleted.exit_code, 1) << deleted.out << deleted.err;
  EXPECT_TRUE(absl::StrContains(deleted.err, "no history store")) << deleted.err;
}

}  // namespace
}  // namespace coach::e2e
