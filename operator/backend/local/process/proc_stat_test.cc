#include "operator/backend/local/process/proc_stat.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace coach::backend::local
