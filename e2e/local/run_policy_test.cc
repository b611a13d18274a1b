// End to end on the local backend: runPolicy (activeDeadlineSeconds, TTL, suspend) and
// deleting a running job, each checked down to the processes in /proc.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

size_t CountLines(const std::string& path) {
  std::vector<std::string> lines = absl::StrSplit(ReadFileOrEmpty(path), '\n', absl::SkipEmpty());
  return lines.size();
}

class RunPolicyTest : public OperatorTest {
 protected:
  void SetUp() override {
    StartOperator();
    work_ = op_->root() + "/work";
  }

  // Whether some process of the fixture runs a command line containing `text`.
  bool HasProcess(const std::string& text) {
    for (const ProcessInfo& p : op_->Processes()) {
      if (absl::StrContains(p.cmdline, text)) return true;
    }
    return false;
  }

  std::string work_;
};

TEST_F(RunPolicyTest, ActiveDeadlineFailsAnIdleJob) {
  // Nothing happens in this job after it starts: only the deadline can end it. Upstream
  // (and coach) delete a failed job's pods per cleanPodPolicy, whose PyTorchJob default
  // "None" would leave the sleeper running: ask for "Running".
  const TrainingJob job = BuildOrDie(ShellJob("deadline", "sleep 300")
                                         .Masters(1)
                                         .RestartPolicy("Never")
                                         .CleanPodPolicy("Running")
                                         .ActiveDeadlineSeconds(3));
  const absl::Time created = absl::Now();
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());
  ASSERT_TRUE(Eventually([&] { return HasProcess("sleep 300"); }, kProcessTimeout, kProcessPoll))
      << DescribeProcesses(op_->Processes());

  absl::StatusOr<TrainingJob> done =
      op_->WaitJob("deadline", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(done.ok()) << done.status();
  const absl::Duration took = absl::Now() - created;
  ASSERT_TRUE(sdk::IsJobFailed(*done)) << done->status().ShortDebugString();
  EXPECT_TRUE(absl::StrContains(sdk::ConditionMessage(*done, "Failed"), "deadline"))
      << sdk::ConditionMessage(*done, "Failed");
  EXPECT_GE(took, absl::Seconds(2));  // the deadline counts from the job's start
  EXPECT_LT(took, absl::Seconds(30)) << "the deadline of 3 s was acted on late";
  const std::vector<ProcessInfo> left = op_->WaitNoProcesses(absl::Seconds(30));
  EXPECT_TRUE(left.empty()) << DescribeProcesses(left);
}

TEST_F(RunPolicyTest, TtlDeletesAFinishedJob) {
  const TrainingJob job = BuildOrDie(
      ShellJob("ttl", "echo done").Masters(1).RestartPolicy("Never").TtlSecondsAfterFinished(2));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());

  // Finished, or (on a slow poll) already collected.
  std::optional<TrainingJob> finished;
  ASSERT_TRUE(Eventually(
      [&] {
        absl::StatusOr<TrainingJob> j = op_->client().GetJob(kNs, "ttl");
        if (absl::IsNotFound(j.status())) return true;
        if (j.ok() && sdk::IsJobFinished(*j)) {
          finished = *j;
          return true;
        }
        return false;
      },
      kProcessTimeout, kProcessPoll));
  if (finished) {
    EXPECT_TRUE(sdk::IsJobSucceeded(*finished)) << finished->status().ShortDebugString();
  }
  ASSERT_TRUE(op_->WaitJobGone("ttl", absl::Seconds(60)).ok());
  const absl::Time gone = absl::Now();
  if (finished) {
    const absl::Time completed =
        absl::FromUnixSeconds(finished->status().completion_time().seconds());
    EXPECT_GE(gone - completed, absl::Seconds(1)) << "deleted before its TTL";
    EXPECT_LT(gone - completed, absl::Seconds(40));
  }
  EXPECT_TRUE(absl::IsNotFound(op_->client().DescribeJob(kNs, "ttl").status()));
  CliResult get = op_->Cli({"get", "ttl"});
  EXPECT_EQ(get.exit_code, 3) << get.out << get.err;
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

TEST_F(RunPolicyTest, SuspendStopsProcessesAndResumeRunsAgain) {
  // Each replica records its start, then waits for the test's "go" file.
  const std::string script = absl::StrCat("echo run >> ", work_, "/runs-$HOSTNAME; while [ ! -e ",
                                          work_, "/go ]; do sleep 0.2; done; echo finished");
  const TrainingJob job =
      BuildOrDie(ShellJob("pausable", script).Masters(1).Workers(1).RestartPolicy("OnFailure"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());
  const std::string master_runs = work_ + "/runs-pausable-master-0";
  const std::string worker_runs = work_ + "/runs-pausable-worker-0";
  ASSERT_TRUE(
      Eventually([&] { return CountLines(master_runs) == 1 && CountLines(worker_runs) == 1; },
                 kProcessTimeout, kProcessPoll));
  ASSERT_TRUE(
      op_->WaitJob("pausable", [](const TrainingJob& j) { return sdk::IsJobRunning(j); }).ok());

  absl::StatusOr<TrainingJob> suspended = op_->client().SuspendJob(kNs, "pausable");
  ASSERT_TRUE(suspended.ok()) << suspended.status();
  absl::StatusOr<TrainingJob> seen =
      op_->WaitJob("pausable", [](const TrainingJob& j) { return sdk::IsJobSuspended(j); });
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_FALSE(sdk::IsJobRunning(*seen)) << seen->status().ShortDebugString();
  const std::vector<ProcessInfo> left = op_->WaitNoProcesses(absl::Seconds(60));
  EXPECT_TRUE(left.empty()) << "suspended, yet running:\n" << DescribeProcesses(left);
  absl::StatusOr<TrainingJob> quiet = op_->WaitJob("pausable", [](const TrainingJob& j) {
    for (const auto& [type, rs] : j.status().replica_statuses()) {
      if (rs.active() != 0) return false;
    }
    return true;
  });
  EXPECT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_EQ(CountLines(master_runs), 1u);

  // Resume through the CLI; the replicas start again and, with "go", finish.
  WriteFileOrDie(work_ + "/go", "");
  CliResult resumed = op_->Cli({"resume", "pausable"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  absl::StatusOr<TrainingJob> done = op_->WaitJob(
      "pausable", [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();
  EXPECT_FALSE(sdk::IsJobSuspended(*done));
  // Once every process has ended, each replica has written its second start.
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
  EXPECT_EQ(CountLines(master_runs), 2u);
  EXPECT_EQ(CountLines(worker_runs), 2u);
}

TEST_F(RunPolicyTest, DeleteWhileRunningLeavesNoProcess) {
  const TrainingJob job =
      BuildOrDie(ShellJob("doomed", "sleep 300").Masters(1).Workers(2).RestartPolicy("OnFailure"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        int sleeps = 0;
        for (const ProcessInfo& p : op_->Processes()) {
          if (absl::StartsWith(p.cmdline, "sleep 300")) ++sleeps;
        }
        return sleeps == 3;
      },
      kProcessTimeout, kProcessPoll))
      << DescribeProcesses(op_->Processes());

  ASSERT_TRUE(op_->client().DeleteJob(kNs, "doomed").ok());
  ASSERT_TRUE(op_->WaitJobGone("doomed").ok());
  const std::vector<ProcessInfo> left = op_->WaitNoProcesses(absl::Seconds(60));
  EXPECT_TRUE(left.empty()) << "deleted, yet running:\n" << DescribeProcesses(left);
  EXPECT_TRUE(absl::IsNotFound(op_->client().DeleteJob(kNs, "doomed")));

  // The same through the CLI.
  ASSERT_TRUE(
      op_->client().CreateJob(BuildOrDie(ShellJob("doomed2", "sleep 300").Masters(1)), kNs).ok());
  ASSERT_TRUE(Eventually([&] { return HasProcess("sleep 300"); }, kProcessTimeout, kProcessPoll));
  CliResult deleted = op_->Cli({"delete", "doomed2"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  ASSERT_TRUE(op_->WaitJobGone("doomed2").ok());
  const std::vector<ProcessInfo> left2 = op_->WaitNoProcesses(absl::Seconds(60));
  EXPECT_TRUE(left2.empty()) << DescribeProcesses(left2);
  CliResult again = op_->Cli({"delete", "doomed2"});
  EXPECT_EQ(again.exit_code, 3) << again.out << again.err;
}

}  // namespace
}  // namespace coach::e2e
