#include "operator/backend/local/replica_facts.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/progress_file.h"

namespace coach::backend::local {
namespace {

class ReplicaFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = ::coach::testing::FreshTestDir("replica_facts") + "/pod.";
    // This test process stands for the replica's shim: its children are the replica's.
    run_.process.pid = getpid();
    run_.process.start_time = ReadProcStat(getpid())->start_time;
    run_.process.pgid = getpgrp();
    run_.process.replica_files = files_;
    run_.running = true;
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
  }

  ReplicaFacts::Facts ReadOne(const ReplicaFacts::Replica& r) { return facts_.Read({r})[0]; }

  ProgressRecord Record(int64_t step) {
    ProgressRecord r;
    r.step = step;
    r.metrics = {{"loss", 1.0 / static_cast<double>(step + 1)}};
    r.steps_per_second = 2;
    r.time = absl::FromUnixSeconds(1700000000 + step);
    return r;
  }

  void SetMtime(const std::string& path, absl::Time t) {
    struct timespec times[2] = {absl::ToTimespec(t), absl::ToTimespec(t)};
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }

  // Waits until the child's state is (or is not) stopped, as /proc shows it.
  void WaitStopped(bool stopped) {
    for (int i = 0; i < 500; ++i) {
      absl::StatusOr<ProcStat> st = ReadProcStat(child_);
      if (st.ok() && IsStopped(*st) == stopped) return;
      absl::SleepFor(absl::Milliseconds(10));
    }
    FAIL() << "child " << child_ << " never " << (stopped ? "stopped" : "continued");
  }

  std::string files_;
  ReplicaFacts::Replica run_;
  FakeClock clock_;
  ReplicaFacts facts_{&clock_, absl::Seconds(1)};
  pid_t child_ = -1;
};

TEST_F(ReplicaFactsTest, NoReportNoProgress) {
  ReplicaFacts::Facts f = ReadOne(run_);
  EXPECT_FALSE(f.progress.has_value());
  EXPECT_FALSE(f.stopped);
  ReplicaFacts::Replica not_started;
  not_started.process.replica_files = files_;
  ASSERT_TRUE(WriteProgressFile(files_, Record(3)).ok());
  EXPECT_FALSE(ReadOne(not_started).progress.has_value()) << "pid 0: not started";
}

TEST_F(ReplicaFactsTest, ProgressFromTheFileFollowsItsChanges) {
  ASSERT_TRUE(WriteProgressFile(files_, Record(3)).ok());
  ReplicaFacts::Facts f = ReadOne(run_);
  ASSERT_TRUE(f.progress.has_value());
  EXPECT_EQ(f.progress->step, 3);
  EXPECT_EQ(f.progress->metrics.at("loss"), 0.25);
  EXPECT_EQ(f.progress->steps_per_second, 2);
  EXPECT_EQ(f.progress->time, Record(3).time);
  EXPECT_EQ(ReadOne(run_).progress->step, 3) << "unchanged: from what is held";
  ASSERT_TRUE(WriteProgressFile(files_, Record(9)).ok());
  EXPECT_EQ(ReadOne(run_).progress->step, 9);
  // A corrupt file counts as none, never a crash; a good one again is read again.
  std::ofstream(ReplicaFile(files_, kProgressFileName)) << "{\"step\": tru";
  EXPECT_FALSE(ReadOne(run_).progress.has_value());
  ASSERT_TRUE(WriteProgressFile(files_, Record(11)).ok());
  EXPECT_EQ(ReadOne(run_).progress->step, 11);
  ASSERT_EQ(unlink(ReplicaFile(files_, kProgressFileName).c_str()), 0);
  EXPECT_FALSE(ReadOne(run_).progress.has_value());
}

TEST_F(ReplicaFactsTest, TheHeartbeatIsProgressInTimeOnly) {
  const std::string heartbeat = ReplicaFile(files_, kHeartbeatFileName);
  std::ofstream(heartbeat).close();
  const absl::Time beat = absl::FromUnixSeconds(1700000100);
  SetMtime(heartbeat, beat);
  ReplicaFacts::Facts f = ReadOne(run_);
  ASSERT_TRUE(f.progress.has_value());
  EXPECT_EQ(f.progress->step, 0);
  EXPECT_TRUE(f.progress->metrics.empty());
  EXPECT_EQ(f.progress->time, beat);
  // With a report: the later of the two.
  ASSERT_TRUE(WriteProgressFile(files_, Record(3)).ok());
  f = ReadOne(run_);
  EXPECT_EQ(f.progress->step, 3);
  EXPECT_EQ(f.progress->time, beat);
  SetMtime(heartbeat, Record(3).time - absl::Hours(1));
  EXPECT_EQ(ReadOne(run_).progress->time, Record(3).time);
}

// What is held belongs to one run and only while it runs.
TEST_F(ReplicaFactsTest, HeldForRunningRunsOnly) {
  ASSERT_TRUE(WriteProgressFile(files_, Record(3)).ok());
  EXPECT_EQ(ReadOne(run_).progress->step, 3);
  EXPECT_EQ(facts_.held(), 1u);
  ReplicaFacts::Replica next = run_;
  next.process.start_time += 1;  // another run of the same pod
  ASSERT_EQ(unlink(ReplicaFile(files_, kProgressFileName).c_str()), 0);
  EXPECT_FALSE(ReadOne(next).progress.has_value());
  ASSERT_TRUE(WriteProgressFile(files_, Record(5)).ok());
  ReplicaFacts::Replica ended = next;
  ended.running = false;
  EXPECT_EQ(ReadOne(ended).progress->step, 5) << "an ended run's final report";
  EXPECT_EQ(facts_.held(), 0u);
  EXPECT_EQ(ReadOne(next).progress->step, 5);
  facts_.Forget(files_);
  EXPECT_EQ(facts_.held(), 0u);
}

// Without a cgroup (no process file names one), the shim's descendants are looked at.
TEST_F(ReplicaFactsTest, AStoppedDescendantIsSeenWhileRunning) {
  child_ = fork();
  ASSERT_GE(child_, 0);
  if (child_ == 0) {
    pause();
    _exit(0);
  }
  EXPECT_FALSE(ReadOne(run_).stopped);
  ASSERT_EQ(kill(child_, SIGSTOP), 0);
  WaitStopped(true);
  EXPECT_FALSE(ReadOne(run_).stopped) << "looked at again only a second later";
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(ReadOne(run_).stopped);
  ReplicaFacts::Replica ended = run_;
  ended.running = false;
  EXPECT_FALSE(ReadOne(ended).stopped) << "only running replicas are looked at";
  ReplicaFacts::Replica other = run_;
  other.process.start_time += 1;
  EXPECT_FALSE(ReadOne(other).stopped) << "another process with the shim's pid";
  ASSERT_EQ(kill(child_, SIGCONT), 0);
  WaitStopped(false);
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(ReadOne(run_).stopped);
}

}  // namespace
}  // namespace coach::backend::local
