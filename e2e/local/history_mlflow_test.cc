// Job history with MLflow tracking and no history store, end to end on the local backend
// (docs/history.md): a tracked job deleted through the API, and one deleted by its TTL, leave
// their record in their run (coach/history.json, tags coach.deleted*), which ListJobHistories and
// `coach history --deleted` find; their logs are read back by uid from the run's artifacts.
// Needs tools/mlflow_env.sh install; fails under CI=true without it.

#include <cstddef>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/local/history_job.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/testing/mlflow_server.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::JobHistory;
using api::v1::TrainingJob;
using mlflow::testing::MlflowServer;

class HistoryMlflowTest : public RestartingJobTest {
 protected:
  void StartTracking(const std::string& uri, const std::string& name = "") {
    OperatorOptions options;
    options.extra_args = {"--mlflow-tracking-uri=" + uri, "--mlflow-experiment=history",
                          "--mlflow-max-backoff=1"};
    StartOperator(options, name);
  }
};

TEST_F(HistoryMlflowTest, ADeletedTrackedJobIsFoundInItsRunWithoutAStore) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  StartTracking(server->uri());
  const TrainingJob job = RunRestartingJob("tracked", /*failing=*/1);
  ASSERT_FALSE(HasFailure());
  const std::string uid = job.metadata().uid();
  const absl::Time deleting = absl::Now();
  ASSERT_TRUE(op_->client().DeleteJob(kNs, "tracked").ok());
  ASSERT_TRUE(op_->WaitJobGone("tracked").ok());

  absl::StatusOr<JobHistory> history = WaitHistory("tracked", uid);
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(history->deleted_by(), "deleted");
  EXPECT_GE(absl::FromUnixSeconds(history->deleted_time().seconds()), deleting - absl::Seconds(2));
  EXPECT_TRUE(sdk::IsJobSucceeded(history->job())) << history->job().status().ShortDebugString();
  ExpectTimeline(history->job(), 1);
  std::set<std::string> want;
  for (int attempt : {0, 1}) {
    for (const std::string replica : kHistoryReplicas) {
      want.insert(absl::StrCat("attempt-", attempt, "/", replica));
    }
  }
  EXPECT_EQ(std::set<std::string>(history->logs().begin(), history->logs().end()), want);

  sdk::TrainingClient& client = op_->client();
  for (size_t r = 0; r < std::size(kHistoryReplicas); ++r) {
    ExpectAttemptLog(client, "tracked", r, 0, "kept/mlflow", uid);
    ExpectAttemptLog(client, "tracked", r, 1, "kept/mlflow", uid);
  }
  EXPECT_TRUE(absl::IsNotFound(ReadLogs(client, "tracked", "", 0, "no-such-uid").status));

  const CliResult deleted = op_->Cli({"history", "--deleted"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_TRUE(absl::StrContains(deleted.out, uid)) << deleted.out;
  const CliResult timeline = op_->Cli({"history", "--deleted", "tracked", "--uid", uid});
  ASSERT_EQ(timeline.exit_code, 0) << timeline.err;
  ExpectAttemptRows(timeline.out, 1);
  const CliResult logs_cli =
      op_->Cli({"logs", "tracked", "--uid", uid, "--attempt", "0", "--replica", "worker-1"});
  ASSERT_EQ(logs_cli.exit_code, 0) << logs_cli.err;
  EXPECT_TRUE(absl::StrContains(logs_cli.out, Hello(2, 0))) << logs_cli.out;
  EXPECT_TRUE(absl::StrContains(logs_cli.err, "kept log (mlflow)")) << logs_cli.err;

  // A restarted operator, which has seen none of it, finds it again on the server.
  if (HasFailure()) std::fprintf(stderr, "%s\n", op_->OperatorLog().c_str());
  op_.reset();
  StartTracking(server->uri(), "restarted");
  absl::StatusOr<JobHistory> again = WaitHistory("tracked", uid);
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectAttemptLog(op_->client(), "tracked", 2, 0, "kept/mlflow", uid);
}

// ttlSecondsAfterFinished deletes a finished job, whose run has ended already: the record joins
// that run.
TEST_F(HistoryMlflowTest, AJobDeletedByItsTtlIsRecordedInItsEndedRun) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  StartTracking(server->uri());
  const std::string uid = RunTtlJob("ttl", 3);
  ASSERT_FALSE(uid.empty());
  absl::StatusOr<JobHistory> history = WaitHistory("ttl", uid);
  ASSERT_TRUE(history.ok()) << history.status();
  EXPECT_EQ(history->deleted_by(), "ttl");
  const LogRead read = ReadLogs(op_->client(), "ttl", "", std::nullopt, uid);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sources, (std::map<std::string, std::string>{{"master-0", "kept/mlflow"}}));
  EXPECT_EQ(read.text, "ttl says bye\n");
}

}  // namespace
}  // namespace coach::e2e
