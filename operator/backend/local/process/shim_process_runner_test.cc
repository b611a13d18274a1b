// The real runner with real processes, through the real coach-replica-shim.
#include "operator/backend/local/process/shim_process_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/log_files.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/progress_file.h"
#include "operator/backend/local/process/replica_cgroup.h"

namespace coach::backend::local {
namespace {

std::string ShimPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "coach",
                      "/operator/backend/local/coach-replica-shim");
}

class ShimProcessRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A parameterised test's name has a '/' in it.
    dir_ = ::coach::testing::FreshTestDir(absl::StrReplaceAll(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), {{"/", "-"}}));
    auto runner = ShimProcessRunner::Create(ShimPath());
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }

  ProcessSpec Spec(std::vector<std::string> argv, const std::string& name = "r0") {
    ProcessSpec spec;
    spec.argv = std::move(argv);
    spec.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
    // One directory for every replica's files, as the local backend lays a job out.
    spec.replica_files = absl::StrCat(dir_, "/replicas/job/", name, ".");
    spec.log_path = absl::StrCat(dir_, "/replicas/job/", name, ".log");
    return spec;
  }

  PollResult WaitExit(const ProcessHandle& h, absl::Duration timeout = absl::Seconds(20)) {
    absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      auto p = runner_->Poll(h);
      EXPECT_TRUE(p.ok()) << p.status();
      if (!p.ok() || p->state != ProcessState::kRunning) return p.ok() ? *p : PollResult();
      absl::SleepFor(absl::Milliseconds(10));
    }
    ADD_FAILURE() << "replica did not end";
    return PollResult();
  }

  // Waits until `path` holds an integer (written by a test script) and returns it.
  pid_t ReadPidFile(const std::string& path) {
    for (int i = 0; i < 2000; ++i) {
      auto text = ReadFile(path);
      pid_t pid;
      if (text.ok() && !text->empty() && text->back() == '\n' &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid)) {
        return pid;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    ADD_FAILURE() << "no pid in " << path;
    return -1;
  }

  // Waits until /proc shows a process of group `pgid` stopped. Not necessarily its leader:
  // a shell stopped while it waits for a vfork child sleeps uninterruptibly (D) until that
  // child, stopped too, runs on.
  static void WaitGroupStopped(pid_t pgid) {
    for (int i = 0; i < 500; ++i) {
      for (const ProcStat& p : ListProcesses()) {
        if (p.pgrp == pgid && IsStopped(p)) return;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    ADD_FAILURE() << "no process of group " << pgid << " stopped";
  }

  static bool Alive(pid_t pid) {
    auto st = ReadProcStat(pid);
    return st.ok() && st->state != 'Z';
  }

  std::string dir_;
  std::unique_ptr<ShimProcessRunner> runner_;
};

TEST_F(ShimProcessRunnerTest, CreateRejectsMissingShim) {
  EXPECT_EQ(ShimProcessRunner::Create("relative/shim").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShimProcessRunner::Create("/nonexistent/shim").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ShimProcessRunnerTest, StartRejectsBadSpecs) {
  ProcessSpec spec = Spec({});
  EXPECT_EQ(runner_->Start(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec = Spec({"true"});
  spec.log_path = "relative.log";
  EXPECT_EQ(runner_->Start(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec = Spec({"true"});
  spec.env = {"NOEQUALS"};
  EXPECT_EQ(runner_->Start(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ShimProcessRunnerTest, RunsCommandWithExactEnvAndLogs) {
  setenv("COACH_OPERATOR_SECRET", "leak", 1);
  ProcessSpec spec = Spec({"sh", "-c",
                           "echo out=$GREETING; echo err >&2; "
                           "echo secret=${COACH_OPERATOR_SECRET:-none}; pwd"});
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GT(h->pid, 0);
  EXPECT_GT(h->pgid, 0);
  EXPECT_NE(h->pid, h->pgid);  // The command has its own group inside the shim's session.
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.state, ProcessState::kExited);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_EQ(p.signal, 0);
  auto log = ReadFile(spec.log_path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(*log, absl::StrCat("out=hello\nerr\nsecret=none\n", dir_, "/replicas/job\n"));
}

TEST_F(ShimProcessRunnerTest, ExitCodeIsRecorded) {
  auto h = runner_->Start(Spec({"sh", "-c", "exit 3"}));
  ASSERT_TRUE(h.ok()) << h.status();
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.state, ProcessState::kExited);
  EXPECT_EQ(p.exit_code, 3);
  EXPECT_EQ(p.signal, 0);
  EXPECT_GT(p.finished_at, absl::Now() - absl::Minutes(1));
}

// The end-of-file descriptor: quiet while the replica runs, at its end once the exit file is
// written, handed out once.
TEST_F(ShimProcessRunnerTest, EndFdReadsEndOfFileOnceTheExitIsRecorded) {
  const std::string go = absl::StrCat(dir_, "/go");
  auto h = runner_->Start(Spec(
      {"/bin/sh", "-c", absl::StrCat("while [ ! -e ", go, " ]; do sleep 0.01; done; exit 5")}));
  ASSERT_TRUE(h.ok()) << h.status();
  const int fd = runner_->TakeEndFd(*h);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(runner_->TakeEndFd(*h), -1);
  struct pollfd pfd = {fd, POLLIN, 0};
  EXPECT_EQ(poll(&pfd, 1, 100), 0) << "readable while the replica runs";
  std::ofstream(go) << "x";
  pfd.revents = 0;
  ASSERT_EQ(poll(&pfd, 1, 20000), 1);
  char c;
  EXPECT_EQ(read(fd, &c, 1), 0);  // end of file, nothing written
  close(fd);
  auto exit = ReadExitRecord(h->replica_files);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 5);
  // An adopted replica has none.
  auto other = ShimProcessRunner::Create(ShimPath());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->TakeEndFd(*h), -1);
}

TEST_F(ShimProcessRunnerTest, KilledBySignalIsRecorded) {
  auto h = runner_->Start(Spec({"sh", "-c", "kill -USR1 $$; sleep 5"}));
  ASSERT_TRUE(h.ok()) << h.status();
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.state, ProcessState::kExited);
  EXPECT_EQ(p.signal, SIGUSR1);
  EXPECT_EQ(p.exit_code, 128 + SIGUSR1);
}

TEST_F(ShimProcessRunnerTest, MissingCommandExits127) {
  auto h = runner_->Start(Spec({"coach-no-such-command-xyz"}));
  ASSERT_TRUE(h.ok()) << h.status();
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.state, ProcessState::kExited);
  EXPECT_EQ(p.exit_code, 127);
  EXPECT_NE(p.message.find("coach-no-such-command-xyz"), std::string::npos) << p.message;
}

TEST_F(ShimProcessRunnerTest, NonExecutableCommandExits126) {
  std::string script = dir_ + "/not-executable.sh";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  auto h = runner_->Start(Spec({script}));
  ASSERT_TRUE(h.ok()) << h.status();
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.exit_code, 126);
}

TEST_F(ShimProcessRunnerTest, PathLookupUsesSpecEnvPath) {
  std::string bin = dir_ + "/bin";
  ASSERT_TRUE(MakeDirs(bin).ok());
  std::string tool = bin + "/coach-test-tool";
  std::ofstream(tool) << "#!/bin/sh\nexit 42\n";
  chmod(tool.c_str(), 0755);
  ProcessSpec spec = Spec({"coach-test-tool"});
  spec.env = {absl::StrCat("PATH=/nonexistent:", bin, ":/usr/bin:/bin")};
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(WaitExit(*h).exit_code, 42);
}

TEST_F(ShimProcessRunnerTest, StopEscalatesToSigkillAfterGrace) {
  std::string ready = dir_ + "/ready";
  auto h = runner_->Start(
      Spec({"sh", "-c",
            absl::StrCat("trap '' TERM; echo $$ > ", ready, "; while true; do sleep 0.05; done")}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  absl::Time start = absl::Now();
  auto p = runner_->Stop(*h, absl::Milliseconds(500));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(500));
  EXPECT_EQ(p->state, ProcessState::kExited);
  EXPECT_EQ(p->signal, SIGKILL);
}

TEST_F(ShimProcessRunnerTest, StopWithGraceLetsTermHandlerFinish) {
  std::string ready = dir_ + "/ready";
  auto h = runner_->Start(Spec({"sh", "-c",
                                absl::StrCat("trap 'echo bye; exit 7' TERM; echo $$ > ", ready,
                                             "; while true; do sleep 0.05; done")}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  auto p = runner_->Stop(*h, absl::Seconds(10));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->state, ProcessState::kExited);
  EXPECT_EQ(p->exit_code, 7);
}

// A stopped process acts on SIGTERM only once continued: Stop continues it, so a stopped
// replica ends within the grace rather than after it.
TEST_F(ShimProcessRunnerTest, StopEndsAStoppedReplicaWithinTheGrace) {
  std::string ready = dir_ + "/ready";
  auto h = runner_->Start(
      Spec({"sh", "-c", absl::StrCat("echo $$ > ", ready, "; while true; do sleep 0.05; done")}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  ASSERT_EQ(kill(-h->pgid, SIGSTOP), 0);
  WaitGroupStopped(h->pgid);
  absl::Time start = absl::Now();
  auto p = runner_->Stop(*h, absl::Seconds(30));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(p->state, ProcessState::kExited);
  EXPECT_EQ(p->signal, SIGTERM);
}

TEST_F(ShimProcessRunnerTest, StopKillsAStoppedReplicaThatIgnoresTermAfterTheGrace) {
  std::string ready = dir_ + "/ready";
  auto h = runner_->Start(
      Spec({"sh", "-c",
            absl::StrCat("trap '' TERM; echo $$ > ", ready, "; while true; do sleep 0.05; done")}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  ASSERT_EQ(kill(-h->pgid, SIGSTOP), 0);
  WaitGroupStopped(h->pgid);
  auto p = runner_->Stop(*h, absl::Milliseconds(300));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->state, ProcessState::kExited);
  EXPECT_EQ(p->signal, SIGKILL);
}

// The shim forwards a SIGTERM sent to itself, and continues the group after it.
TEST_F(ShimProcessRunnerTest, TermToTheShimEndsAStoppedReplica) {
  std::string ready = dir_ + "/ready";
  auto h = runner_->Start(
      Spec({"sh", "-c", absl::StrCat("echo $$ > ", ready, "; while true; do sleep 0.05; done")}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  ASSERT_EQ(kill(-h->pgid, SIGSTOP), 0);
  WaitGroupStopped(h->pgid);
  ASSERT_EQ(kill(h->pid, SIGTERM), 0);
  PollResult p = WaitExit(*h, absl::Seconds(10));
  EXPECT_EQ(p.state, ProcessState::kExited);
  EXPECT_EQ(p.signal, SIGTERM);
}

TEST_F(ShimProcessRunnerTest, StopKillsTheWholeGroup) {
  std::string child_file = dir_ + "/child";
  auto h = runner_->Start(
      Spec({"sh", "-c", absl::StrCat("sleep 1000 & echo $! > ", child_file, "; wait")}));
  ASSERT_TRUE(h.ok()) << h.status();
  pid_t child = ReadPidFile(child_file);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(Alive(child));
  auto p = runner_->Stop(*h, absl::Seconds(2));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->state, ProcessState::kExited);
  for (int i = 0; i < 200 && Alive(child); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_FALSE(Alive(child));
}

TEST_F(ShimProcessRunnerTest, LeftoversDieWhenMainCommandExits) {
  std::string child_file = dir_ + "/child";
  auto h = runner_->Start(
      Spec({"sh", "-c", absl::StrCat("sleep 1000 & echo $! > ", child_file, "; exit 5")}));
  ASSERT_TRUE(h.ok()) << h.status();
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.exit_code, 5);
  pid_t child = ReadPidFile(child_file);
  for (int i = 0; i < 200 && Alive(child); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_FALSE(Alive(child));
}

TEST_F(ShimProcessRunnerTest, SignalReachesTheGroup) {
  std::string ready = dir_ + "/ready";
  auto h = runner_->Start(Spec({"sh", "-c",
                                absl::StrCat("trap 'exit 9' USR2; echo $$ > ", ready,
                                             "; while true; do sleep 0.05; done")}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  ASSERT_TRUE(runner_->Signal(*h, SIGUSR2).ok());
  EXPECT_EQ(WaitExit(*h).exit_code, 9);
  EXPECT_EQ(runner_->Signal(*h, SIGUSR2).code(), absl::StatusCode::kNotFound);
}

TEST_F(ShimProcessRunnerTest, ReadoptedByANewRunnerAfterOperatorDeath) {
  std::string go = dir_ + "/go";
  ProcessSpec spec =
      Spec({"sh", "-c", absl::StrCat("while [ ! -e ", go, " ]; do sleep 0.02; done; exit 4")});
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  ProcessHandle saved = *h;
  runner_.reset();  // The operator dies; nothing of the runner object survives.

  auto fresh = ShimProcessRunner::Create(ShimPath());
  ASSERT_TRUE(fresh.ok());
  runner_ = std::move(*fresh);
  auto recovered = runner_->Recover(spec.replica_files);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(*recovered, saved);
  auto p = runner_->Poll(saved);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kRunning);
  std::ofstream(go) << "go";
  PollResult done = WaitExit(saved);
  EXPECT_EQ(done.state, ProcessState::kExited);
  EXPECT_EQ(done.exit_code, 4);
}

// The process file is not synced; a power cut may lose it. An ended replica is still
// recognised from its exit file, which names the same process.
TEST_F(ShimProcessRunnerTest, RecoverFallsBackToTheExitFileWithoutAProcessFile) {
  ProcessSpec spec = Spec({"sh", "-c", "exit 6"});
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(WaitExit(*h).exit_code, 6);
  ASSERT_EQ(unlink(ReplicaFile(spec.replica_files, kProcessFileName).c_str()), 0);
  auto recovered = runner_->Recover(spec.replica_files);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(*recovered, *h);
  auto p = runner_->Poll(*recovered);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kExited);
  EXPECT_EQ(p->exit_code, 6);
  // Neither file: never started.
  ASSERT_EQ(unlink(ReplicaFile(spec.replica_files, kExitFileName).c_str()), 0);
  EXPECT_EQ(runner_->Recover(spec.replica_files).status().code(), absl::StatusCode::kNotFound);
}

// A replica's files are named by a prefix in its job's directory (<dir>/<pod>.exit), with no
// directory of the replica's own; a base that is not such a prefix is refused.
TEST_F(ShimProcessRunnerTest, TheFilesAreNamedByAPrefixInTheJobsDirectory) {
  ProcessSpec spec = Spec({"sh", "-c", "exit 7"});
  spec.replica_files = absl::StrCat(dir_, "/replicas/job/r0.");
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(WaitExit(*h).exit_code, 7);
  EXPECT_TRUE(ReadFile(absl::StrCat(dir_, "/replicas/job/r0.", kExitFileName)).ok());
  EXPECT_TRUE(ReadFile(absl::StrCat(dir_, "/replicas/job/r0.", kProcessFileName)).ok());
  struct stat st;
  EXPECT_NE(stat(absl::StrCat(dir_, "/replicas/job/r0").c_str(), &st), 0) << "no directory";
  auto recovered = runner_->Recover(spec.replica_files);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(*recovered, *h);

  spec.replica_files = absl::StrCat(dir_, "/replicas/job/r1");
  EXPECT_EQ(runner_->Start(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.replica_files = "replicas/job/r1.";
  EXPECT_EQ(runner_->Start(spec).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ShimProcessRunnerTest, ExitStatusSurvivesWhenNotOurChild) {
  // A replica started by a process that then died: it is re-parented, nobody can
  // waitpid it, and its exit code still comes through the shim's exit file.
  std::string handle_file = dir_ + "/handle";
  std::string go = dir_ + "/go";
  ProcessSpec spec =
      Spec({"sh", "-c", absl::StrCat("while [ ! -e ", go, " ]; do sleep 0.02; done; exit 6")});
  pid_t op = fork();
  ASSERT_GE(op, 0);
  if (op == 0) {
    auto r = ShimProcessRunner::Create(ShimPath());
    if (!r.ok() || !(*r)->Start(spec).ok()) _exit(1);
    _exit(0);  // The "operator" exits without waiting for its replica.
  }
  int st = 0;
  ASSERT_EQ(waitpid(op, &st, 0), op);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  auto h = runner_->Recover(spec.replica_files);
  ASSERT_TRUE(h.ok()) << h.status();
  auto p = runner_->Poll(*h);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kRunning);
  std::ofstream(go) << "go";
  EXPECT_EQ(WaitExit(*h).exit_code, 6);
}

TEST_F(ShimProcessRunnerTest, RecycledPidIsNotMistakenForTheReplica) {
  // A handle whose pid is alive (this test) but whose start time differs, with no exit
  // file: the replica vanished; it must not be reported running nor be signalled.
  ProcessHandle fake;
  fake.pid = getpid();
  fake.pgid = getpgrp();
  auto self = ReadProcStat(getpid());
  ASSERT_TRUE(self.ok());
  fake.start_time = self->start_time + 1;
  fake.replica_files = dir_ + "/recycled.";
  auto p = runner_->Poll(fake);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kVanished);
  EXPECT_FALSE(p->message.empty());
  EXPECT_EQ(runner_->Signal(fake, SIGTERM).code(), absl::StatusCode::kNotFound);
  auto stopped = runner_->Stop(fake, absl::Milliseconds(10));
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->state, ProcessState::kVanished);
  EXPECT_TRUE(Alive(getpid()));  // Still here to tell.
}

TEST_F(ShimProcessRunnerTest, KilledShimIsVanishedAndStopReapsItsGroup) {
  std::string child_file = dir_ + "/child";
  auto h = runner_->Start(
      Spec({"sh", "-c", absl::StrCat("sleep 1000 & echo $! > ", child_file, "; wait")}));
  ASSERT_TRUE(h.ok()) << h.status();
  pid_t child = ReadPidFile(child_file);
  ASSERT_EQ(kill(h->pid, SIGKILL), 0);
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.state, ProcessState::kVanished);
  EXPECT_TRUE(Alive(child));  // Orphaned, until Stop.
  auto stopped = runner_->Stop(*h, absl::Seconds(1));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  for (int i = 0; i < 200 && Alive(child); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_FALSE(Alive(child));
}

// A full disk at the replica's end (here: its exit file cannot be made): said as such, not as
// a supervisor that vanished.
TEST_F(ShimProcessRunnerTest, AnExitThatCannotBeRecordedIsSaidSo) {
  const std::string go = dir_ + "/go";
  auto h = runner_->Start(
      Spec({"sh", "-c", absl::StrCat("while [ ! -e ", go, " ]; do sleep 0.01; done; exit 3")}));
  ASSERT_TRUE(h.ok()) << h.status();
  const std::string blocked = ReplicaFile(h->replica_files, kExitFileName) + ".tmp";
  ASSERT_EQ(mkdir(blocked.c_str(), 0700), 0);
  ASSERT_EQ(mkdir(go.c_str(), 0700), 0);
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.state, ProcessState::kVanished);
  EXPECT_THAT(p.message, ::testing::HasSubstr("could not record how"));
  rmdir(blocked.c_str());
}

TEST_F(ShimProcessRunnerTest, RestartReplacesStaleExitFile) {
  ProcessSpec spec = Spec({"sh", "-c", "exit 1"});
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(WaitExit(*h).exit_code, 1);
  spec.argv = {"sh", "-c", "sleep 0.3; exit 2"};
  auto h2 = runner_->Start(spec);
  ASSERT_TRUE(h2.ok());
  auto p = runner_->Poll(*h2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kRunning);
  EXPECT_EQ(WaitExit(*h2).exit_code, 2);
}

// The shim keeps the replica's progress from its coach-metric lines: written while it runs,
// final when the exit file is there.
TEST_F(ShimProcessRunnerTest, MetricLinesAreTheReplicasProgress) {
  const std::string go = dir_ + "/go";
  ProcessSpec spec =
      Spec({"sh", "-c",
            absl::StrCat("echo 'coach-metric name=loss value=0.75 step=1'; echo noise >&2; ",
                         "echo 'coach-metric name=loss value=0.5 step=3'; ", "while [ ! -e ", go,
                         " ]; do sleep 0.01; done; ",
                         "echo 'coach-metric name=accuracy value=0.25 step=2'")});
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  absl::StatusOr<ProgressRecord> progress;
  for (int i = 0; i < 1000; ++i) {
    progress = ReadProgressFile(spec.replica_files);
    if (progress.ok() && progress->step == 3) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(progress.ok()) << progress.status();
  EXPECT_EQ(progress->step, 3);
  EXPECT_EQ(progress->metrics, (std::map<std::string, double>{{"loss", 0.5}}));
  std::ofstream(go).close();
  EXPECT_EQ(WaitExit(*h).exit_code, 0);
  progress = ReadProgressFile(spec.replica_files);
  ASSERT_TRUE(progress.ok()) << progress.status();
  EXPECT_EQ(progress->step, 3);
  EXPECT_EQ(progress->metrics, (std::map<std::string, double>{{"loss", 0.5}, {"accuracy", 0.25}}));
  EXPECT_EQ(ReadFile(spec.log_path).value_or(""),
            "coach-metric name=loss value=0.75 step=1\nnoise\n"
            "coach-metric name=loss value=0.5 step=3\n"
            "coach-metric name=accuracy value=0.25 step=2\n")
      << "the log has every line";
  // The next run of the replica starts without it, and one that reports nothing has none.
  spec.argv = {"sh", "-c", "exit 0"};
  auto h2 = runner_->Start(spec);
  ASSERT_TRUE(h2.ok()) << h2.status();
  EXPECT_EQ(WaitExit(*h2).exit_code, 0);
  EXPECT_TRUE(absl::IsNotFound(ReadProgressFile(spec.replica_files).status()));
}

TEST_F(ShimProcessRunnerTest, RunawayLogIsRotated) {
  // 30 bursts of 100 lines (~4.6 KB each), 50 ms apart.
  ProcessSpec spec = Spec({"sh", "-c",
                           "b=0; while [ $b -lt 30 ]; do i=0; while [ $i -lt 100 ]; do "
                           "echo line-$b-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); "
                           "done; b=$((b+1)); sleep 0.05; done; sleep 0.1; echo last-line"});
  spec.max_log_bytes = 4096;
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(WaitExit(*h).exit_code, 0);
  auto live = FileSize(spec.log_path);
  auto rotated = FileSize(spec.log_path + ".1");
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE(rotated.ok()) << "never rotated";
  // Unbounded, the log would be ~140 KB.
  EXPECT_LE(*live, 4096);
  EXPECT_LE(*rotated, 4096);
  auto tail = TailLines(spec.log_path, 1);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, "last-line\n");
}

// The resident memory of process `pid` in bytes (0 once it is gone).
int64_t ResidentBytes(pid_t pid) {
  absl::StatusOr<std::string> status = ReadFile(absl::StrCat("/proc/", pid, "/status"));
  if (!status.ok()) return 0;
  for (absl::string_view line : absl::StrSplit(*status, '\n')) {
    if (!absl::ConsumePrefix(&line, "VmRSS:")) continue;
    int64_t kb = 0;
    if (absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(line), " kB"), &kb)) {
      return kb * 1024;
    }
  }
  return 0;
}

// A program writing as fast as it can: the log stays within its bound on disk at every
// moment, the shim's memory stays small, and the newest lines are the ones kept, the last
// one included.
TEST_F(ShimProcessRunnerTest, FastWriterStaysWithinTheBoundAndKeepsItsLastLine) {
  constexpr int64_t kCap = 8 << 20;
  const std::string line = "a line of the fast writer, as fast as it goes\n";  // 46 bytes
  ProcessSpec spec = Spec({"sh", "-c",
                           absl::StrCat("yes '", absl::StripSuffix(line, "\n"), "' | head -c ",
                                        46 * 4347826, "; echo the-last-line")});
  spec.max_log_bytes = kCap;
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  int64_t peak_disk = 0, peak_rss = 0;
  absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    peak_rss = std::max(peak_rss, ResidentBytes(h->pid));
    peak_disk = std::max(peak_disk, FileSize(spec.log_path).value_or(0) +
                                        FileSize(spec.log_path + ".1").value_or(0));
    auto p = runner_->Poll(*h);
    ASSERT_TRUE(p.ok()) << p.status();
    if (p->state != ProcessState::kRunning) break;
    absl::SleepFor(absl::Milliseconds(2));
  }
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.exit_code, 0) << p.message;
  EXPECT_LE(*FileSize(spec.log_path), kCap);
  EXPECT_LE(*FileSize(spec.log_path + ".1"), kCap);
  EXPECT_LE(peak_disk, 2 * kCap);
  EXPECT_LT(peak_rss, 32 << 20);
  auto tail = TailLines(spec.log_path, 1);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*tail, "the-last-line\n");
  // Whole lines only, the newest: the rotated file's, then the live one's, up to the last.
  const std::string kept = ReadFile(spec.log_path + ".1").value_or("") + *ReadFile(spec.log_path);
  ASSERT_TRUE(absl::EndsWith(kept, line + "the-last-line\n"));
  const std::string before = kept.substr(0, kept.size() - strlen("the-last-line\n"));
  ASSERT_EQ(before.size() % line.size(), 0u);
  for (size_t i = 0; i < before.size(); i += line.size()) {
    ASSERT_EQ(before.compare(i, line.size(), line), 0) << "at " << i;
  }
}

// Processes that leave the replica's process group (setsid, a double fork) die with it,
// with the replica's own cgroup and with the shim's subreaper alone.
class EscapedProcessesTest : public ShimProcessRunnerTest,
                             public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ShimProcessRunnerTest::SetUp();
    ShimProcessRunner::Options options;
    options.replica_cgroups = GetParam();
    auto runner = ShimProcessRunner::Create(ShimPath(), options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }

  // A script that starts `n` processes in sessions of their own and one behind a double
  // fork, each appending its pid to `pids`, waits until all wrote it, then runs `then`.
  // `pids` exists before the first of them starts: a missing file would make the count
  // empty and `[` fail, which ends the wait before anything was written.
  static std::string EscapeScript(const std::string& pids, int n, const std::string& then) {
    return absl::StrCat(": > ", pids, "; i=0; while [ $i -lt ", n,
                        " ]; do setsid sh -c 'echo $$ >> ", pids,
                        "; exec sleep 1000' & i=$((i+1)); done; ", "( sh -c 'echo $$ >> ", pids,
                        "; exec sleep 1000' & ) ; ", "while [ $(wc -l < ", pids, ") -lt ", n + 1,
                        " ]; do sleep 0.01; done; ", then);
  }

  std::vector<pid_t> Pids(const std::string& path) {
    std::vector<pid_t> out;
    for (absl::string_view line : absl::StrSplit(ReadFile(path).value_or(""), '\n')) {
      pid_t pid;
      if (absl::SimpleAtoi(line, &pid)) out.push_back(pid);
    }
    return out;
  }
};

TEST_P(EscapedProcessesTest, DieWhenTheCommandExits) {
  const std::string pids = dir_ + "/pids";
  auto h = runner_->Start(Spec({"sh", "-c", EscapeScript(pids, 20, "exit 0")}));
  ASSERT_TRUE(h.ok()) << h.status();
  PollResult p = WaitExit(*h);
  EXPECT_EQ(p.exit_code, 0) << p.message;
  const std::vector<pid_t> escaped = Pids(pids);
  ASSERT_EQ(escaped.size(), 21u);
  // Already when the exit is recorded: the shim writes it after the last of them ended.
  for (pid_t pid : escaped) EXPECT_FALSE(Alive(pid)) << pid;
}

TEST_P(EscapedProcessesTest, DieWhenTheReplicaIsStopped) {
  const std::string pids = dir_ + "/pids";
  const std::string ready = dir_ + "/ready";
  auto h = runner_->Start(
      Spec({"sh", "-c",
            EscapeScript(pids, 20,
                         absl::StrCat("echo $$ > ", ready, "; while true; do sleep 0.05; done"))}));
  ASSERT_TRUE(h.ok()) << h.status();
  ReadPidFile(ready);
  const std::vector<pid_t> escaped = Pids(pids);
  ASSERT_EQ(escaped.size(), 21u);
  for (pid_t pid : escaped) EXPECT_TRUE(Alive(pid)) << pid;
  auto stopped = runner_->Stop(*h, absl::Seconds(2));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->state, ProcessState::kExited);
  for (pid_t pid : escaped) EXPECT_FALSE(Alive(pid)) << pid;
}

INSTANTIATE_TEST_SUITE_P(CgroupAndSubreaper, EscapedProcessesTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "WithCgroup" : "SubreaperOnly";
                         });

// Where the host lets the shim make cgroups: the command runs in one of its own, which the
// process file names, which holds also what left the group, and which is gone at the end.
// After a SIGKILL of the shim itself (no subreaper any more), Stop still ends what is in it.
TEST_F(ShimProcessRunnerTest, ReplicaCgroupOutlivesAKilledShimUntilStop) {
  const std::string pids = dir_ + "/pids";
  ProcessSpec spec = Spec(
      {"sh", "-c", absl::StrCat("setsid sh -c 'echo $$ > ", pids, "; exec sleep 1000' & wait")});
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  auto pf = ReadProcessFile(spec.replica_files);
  ASSERT_TRUE(pf.ok()) << pf.status();
  if (pf->cgroup.empty()) GTEST_SKIP() << "this host gives the shim no cgroup v2 to write";
  pid_t escaped = ReadPidFile(pids);
  auto members = CgroupMembers(pf->cgroup);
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_NE(std::find(members->begin(), members->end(), escaped), members->end());
  EXPECT_NE(std::find(members->begin(), members->end(), h->pgid), members->end());
  EXPECT_EQ(std::find(members->begin(), members->end(), h->pid), members->end());  // not the shim
  ASSERT_EQ(kill(h->pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(*h).state, ProcessState::kVanished);
  EXPECT_TRUE(Alive(escaped));
  auto stopped = runner_->Stop(*h, absl::Seconds(1));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_FALSE(Alive(escaped));
  EXPECT_FALSE(Alive(h->pgid));
  struct stat st;
  EXPECT_NE(stat(pf->cgroup.c_str(), &st), 0) << pf->cgroup << " left behind";
}

}  // namespace
}  // namespace coach::backend::local
