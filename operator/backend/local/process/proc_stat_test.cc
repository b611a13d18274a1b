#include "operator/backend/local/process/proc_stat.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace coach::backend::local {
namespace {

TEST(ProcStatTest, ParsesCommandNamesWithSpacesAndParens) {
  auto st = ParseProcStat(
      "4242 (my (weird) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "987654 1000 100 18446744073709551615\n");
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->pgrp, 4242);
  EXPECT_EQ(st->session, 4242);
  EXPECT_EQ(st->start_time, 987654u);
}

TEST(ProcStatTest, RejectsGarbage) {
  EXPECT_FALSE(ParseProcStat("").ok());
  EXPECT_FALSE(ParseProcStat("12 (x) S 1 2").ok());
}

TEST(ProcStatTest, ReadsSelf) {
  auto st = ReadProcStat(getpid());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->pid, getpid());
  EXPECT_EQ(st->pgrp, getpgrp());
  EXPECT_TRUE(IsSameLiveProcess(getpid(), st->start_time));
  EXPECT_FALSE(IsSameLiveProcess(getpid(), st->start_time + 1));
  EXPECT_EQ(ReadProcStat(-1).status().code(), absl::StatusCode::kNotFound);
}

ProcStat P(pid_t pid, pid_t ppid) {
  ProcStat p;
  p.pid = pid;
  p.ppid = ppid;
  return p;
}

std::vector<pid_t> Pids(const std::vector<ProcStat>& ps) {
  std::vector<pid_t> out;
  for (const ProcStat& p : ps) out.push_back(p.pid);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ProcStatTest, DescendantsInFollowsEveryGeneration) {
  // 1 -> 10 -> {11 -> 13, 12}; 1 -> 20; 0 -> 1, 2 (the kernel's roots).
  const std::vector<ProcStat> table = {P(1, 0),   P(2, 0),   P(10, 1), P(11, 10),
                                       P(12, 10), P(13, 11), P(20, 1)};
  EXPECT_EQ(Pids(DescendantsIn(table, 10)), (std::vector<pid_t>{11, 12, 13}));
  EXPECT_EQ(Pids(DescendantsIn(table, 11)), (std::vector<pid_t>{13}));
  EXPECT_EQ(Pids(DescendantsIn(table, 13)), (std::vector<pid_t>{}));
  EXPECT_EQ(Pids(DescendantsIn(table, 99)), (std::vector<pid_t>{}));
  EXPECT_EQ(Pids(DescendantsIn(table, 1)), (std::vector<pid_t>{10, 11, 12, 13, 20}));
}

TEST(ProcStatTest, SignalIfSameHitsOnlyTheSameProcess) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto st = ReadProcStat(child);
  ASSERT_TRUE(st.ok()) << st.status();
  ProcStat other = *st;
  other.start_time += 1;  // a recycled pid: same number, another process
  EXPECT_FALSE(SignalIfSame(other, SIGKILL));
  const std::vector<pid_t> mine = Pids(DescendantsIn(ListProcesses(), getpid()));
  EXPECT_NE(std::find(mine.begin(), mine.end(), child), mine.end());
  EXPECT_TRUE(SignalIfSame(*st, SIGKILL));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(SignalIfSame(*st, SIGKILL));  // reaped: gone
}

}  // namespace
}  // namespace coach::backend::local
