// The real runner with real processes, through the real coach-replica-shim.
#include "operator/backend/local/process/shim_process_runner.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/log_files.h"
#include "operator/backend/local/process/proc_stat.h"

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
    const char* tmp = getenv("TEST_TMPDIR");
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat(tmp ? tmp : "/tmp", "/", info->name());
    ASSERT_TRUE(MakeDirs(dir_).ok());
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

// Replicas an older operator started keep their files in a directory of their own
// (<dir>/exit): a base that does not end in '.' still means that directory.
TEST_F(ShimProcessRunnerTest, ADirectoryOfItsOwnStillHoldsTheFiles) {
  ProcessSpec spec = Spec({"sh", "-c", "exit 7"});
  spec.replica_files = absl::StrCat(dir_, "/replicas/old/r0");
  auto h = runner_->Start(spec);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(WaitExit(*h).exit_code, 7);
  EXPECT_TRUE(ReadFile(absl::StrCat(spec.replica_files, "/", kExitFileName)).ok());
  EXPECT_TRUE(ReadFile(absl::StrCat(spec.replica_files, "/", kProcessFileName)).ok());
  auto recovered = runner_->Recover(spec.replica_files);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(*recovered, *h);
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

TEST_F(ShimProcessRunnerTest, RunawayLogIsRotated) {
  // 30 bursts of 100 lines (~4.6 KB each), 50 ms apart: the shim (checking every 20 ms)
  // rotates between bursts, so neither file grows much past the limit plus one burst.
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
  EXPECT_LE(*live, 4096 + 5000);
  EXPECT_LE(*rotated, 4096 + 5000);
  auto tail = TailLines(spec.log_path, 1);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, "last-line\n");
}

}  // namespace
}  // namespace coach::backend::local
