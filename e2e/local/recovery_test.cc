// Whole-job recovery on the local backend with real training: a 3-rank gloo DDP job
// (examples/pytorch/ddp_train.py, 1 Master + 2 Workers) under coach.dev/restart-scope: Job,
// checkpointing every epoch. One rank is SIGKILLed, or SIGSTOPped (caught by
// coach.dev/progress-deadline), mid-training: the job restarts every replica once, resumes
// from its checkpoint, and succeeds with one parameter checksum on every rank.

#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/eventually.h"
#include "e2e/common/job_manifest.h"
#include "e2e/local/operator_fixture.h"
#include "e2e/local/rank_results.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

// The value of `name` in /proc/<pid>/environ; "" when absent or unreadable.
std::string EnvOf(pid_t pid, const std::string& name) {
  const std::string environ = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/environ"));
  for (absl::string_view entry : absl::StrSplit(environ, '\0')) {
    if (absl::StartsWith(entry, name + "=")) return std::string(entry.substr(name.size() + 1));
  }
  return "";
}

class RecoveryTest : public OperatorTest {
 protected:
  void SetUp() override {
    OperatorOptions options;
    options.workdir = Runfile("");
    StartOperator(options);
    checkpoints_ = absl::StrCat(op_->root(), "/checkpoints");
  }

  // The 3-rank job, restarted as a whole (at most twice, whatever backoffLimit says), that
  // checkpoints every epoch under checkpoints_/<name>.
  JobManifest Manifest(const std::string& name) const {
    return JobManifest::PyTorch(name)
        .Annotation("coach.dev/restart-scope", "Job")
        .Annotation("coach.dev/max-restarts", "2")
        .BackoffLimit(0)
        .Replicas({{"Master", 1}, {"Worker", 2}})
        .RestartPolicy("OnFailure")
        .Image("coach.local/coach-training:dev")
        .Command({"/usr/bin/python3", "examples/pytorch/ddp_train.py", "--epochs", "8",
                  "--epoch-seconds", "1.5", "--checkpoint-dir",
                  absl::StrCat(checkpoints_, "/", name)});
  }

  // The pid of the training process of global rank `rank` of the job's current attempt.
  pid_t RankPid(int rank) const {
    for (const ProcessInfo& p : op_->Processes()) {
      // The training process itself, not its shim (whose command line and environment hold
      // the same words).
      if (!absl::StartsWith(p.cmdline, "/usr/bin/python3 ") ||
          !absl::StrContains(p.cmdline, "ddp_train.py")) {
        continue;
      }
      if (EnvOf(p.pid, "RANK") == absl::StrCat(rank)) return p.pid;
    }
    return 0;
  }

  // Waits until rank 0 logged `coach-checkpoint saved epoch=<epoch>`.
  void WaitForCheckpoint(const std::string& name, int epoch) {
    const std::string want = absl::StrCat("coach-checkpoint saved epoch=", epoch);
    ASSERT_TRUE(coach::testing::Eventually(
        [&] {
          absl::StatusOr<std::string> log = op_->Logs(name, "master-0");
          return log.ok() && absl::StrContains(*log, want);
        },
        absl::Minutes(3), absl::Milliseconds(200)))
        << "no checkpoint of epoch " << epoch << "\n"
        << op_->Logs(name, "master-0").value_or("");
  }

  // Waits for the end; checks one counted restart, every rank ok in attempt 1 after resuming,
  // one checksum.
  TrainingJob ExpectRecovered(const std::string& name) {
    absl::StatusOr<TrainingJob> done = op_->WaitFinished(name, absl::Minutes(4));
    if (!done.ok()) {
      ADD_FAILURE() << done.status();
      return {};
    }
    std::string logs;
    std::set<std::string> checksums;
    std::set<std::string> ranks;
    for (const std::string replica : {"master-0", "worker-0", "worker-1"}) {
      absl::StatusOr<std::string> log = op_->Logs(name, replica);
      EXPECT_TRUE(log.ok()) << replica << ": " << log.status();
      if (!log.ok()) continue;
      absl::StrAppend(&logs, "--- ", replica, " ---\n", *log);
      for (ResultFields& f : ResultLines(*log)) {
        EXPECT_EQ(f["status"], "ok") << *log;
        EXPECT_EQ(f["attempt"], "1") << *log;
        int resumed = -1;
        EXPECT_TRUE(absl::SimpleAtoi(f["resumed_from"], &resumed) && resumed >= 1) << *log;
        ranks.insert(f["rank"]);
        checksums.insert(f["params_checksum"]);
      }
    }
    EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString() << "\n" << logs;
    EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"})) << logs;
    EXPECT_EQ(checksums.size(), 1u) << logs;
    EXPECT_EQ(done->status().coach().attempt(), 1) << done->status().ShortDebugString();
    EXPECT_EQ(done->status().coach().restarts(), 1) << done->status().ShortDebugString();
    EXPECT_TRUE(op_->WaitNoProcesses().empty());
    return *done;
  }

  std::string checkpoints_;
};

// kill -9 of a Worker: its peers' collectives fail at once; the job restarts as a whole, once,
// although backoffLimit is 0 (the job-level budget is coach.dev/max-restarts).
TEST_F(RecoveryTest, KillNineOfAWorkerRestartsTheJobOnceAndResumes) {
  ASSERT_TRUE(op_->client().CreateJobFromManifest(Manifest("kill-worker").Yaml(), kNs).ok());
  WaitForCheckpoint("kill-worker", 2);
  const pid_t pid = RankPid(2);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  const TrainingJob done = ExpectRecovered("kill-worker");
  EXPECT_EQ(done.status().coach().restarts_by_type().count("Worker"), 1u);
}

// kill -9 of the Master (rank 0, the rendezvous host): the next attempt's rendezvous is new.
TEST_F(RecoveryTest, KillNineOfTheMasterRestartsTheJobOnceAndResumes) {
  ASSERT_TRUE(op_->client().CreateJobFromManifest(Manifest("kill-master").Yaml(), kNs).ok());
  WaitForCheckpoint("kill-master", 1);
  const pid_t pid = RankPid(0);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ExpectRecovered("kill-master");
}

// SIGSTOP of a Worker: every rank blocks in its next collective and nothing times out for
// minutes; the progress deadline (10 s) catches it, names the stopped replica, and the
// restart is counted.
TEST_F(RecoveryTest, StoppedRankIsCaughtByTheProgressDeadline) {
  const std::string manifest =
      Manifest("stop-worker").Annotation("coach.dev/progress-deadline", "10s").Yaml();
  ASSERT_TRUE(op_->client().CreateJobFromManifest(manifest, kNs).ok());
  WaitForCheckpoint("stop-worker", 2);
  const pid_t pid = RankPid(1);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const absl::Time stopped = absl::Now();
  absl::StatusOr<TrainingJob> restarting = op_->WaitJob(
      "stop-worker", [](const TrainingJob& j) { return j.status().coach().attempt() >= 1; },
      absl::Minutes(2));
  ASSERT_TRUE(restarting.ok()) << restarting.status();
  const absl::Duration caught = absl::Now() - stopped;
  // The deadline counts from the last progress, which came before the stop.
  EXPECT_LT(caught, absl::Seconds(10 + 5)) << "stall caught after " << caught;
  // The Restarting condition gives way to Running once the next attempt runs; the event stays.
  absl::StatusOr<api::v1::DescribeJobResponse> described =
      op_->client().DescribeJob(kNs, "stop-worker");
  ASSERT_TRUE(described.ok()) << described.status();
  std::string messages;
  for (const auto& e : described->events()) {
    if (e.reason() == "PyTorchJobRestarting") absl::StrAppend(&messages, e.message(), "\n");
  }
  EXPECT_TRUE(absl::StrContains(messages, "it stalled: Worker replica 0 stopped")) << messages;
  const TrainingJob done = ExpectRecovered("stop-worker");
  EXPECT_GE(done.status().coach().progress().step(), 7) << done.status().ShortDebugString();
}

}  // namespace
}  // namespace coach::e2e
