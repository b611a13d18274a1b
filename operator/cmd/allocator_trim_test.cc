#include "operator/cmd/allocator_trim.h"

#include <gtest/gtest.h>

#include <atomic>

namespace coach::cmd {
namespace {

TEST(BurstTrimmerTest, TrimsOnceWhenABurstEnds) {
  int trims = 0;
  BurstTrimmer trimmer([] { return int64_t{0}; }, [&] { ++trims; });
  EXPECT_FALSE(trimmer.Tick(0)) << "nothing done yet";
  EXPECT_FALSE(trimmer.Tick(10)) << "busy";
  EXPECT_FALSE(trimmer.Tick(25)) << "still busy";
  EXPECT_TRUE(trimmer.Tick(25)) << "the burst is over";
  EXPECT_EQ(trims, 1);
  EXPECT_FALSE(trimmer.Tick(25)) << "nothing since the last trim";
  EXPECT_FALSE(trimmer.Tick(25));
  EXPECT_EQ(trims, 1);
  EXPECT_FALSE(trimmer.Tick(26));
  EXPECT_TRUE(trimmer.Tick(26));
  EXPECT_EQ(trims, 2);
}

TEST(BurstTrimmerTest, ALongBurstIsTrimmedEveryMaxBusyIntervals) {
  int trims = 0;
  BurstTrimmerOptions options;
  options.max_busy_intervals = 3;
  BurstTrimmer trimmer([] { return int64_t{0}; }, [&] { ++trims; }, options);
  int64_t work = 0;
  for (int i = 0; i < 9; ++i) trimmer.Tick(work += 5);
  EXPECT_EQ(trims, 3);
}

TEST(BurstTrimmerTest, ItsThreadTicksUntilStopped) {
  std::atomic<int64_t> work{0};
  std::atomic<int> trims{0};
  BurstTrimmerOptions options;
  options.interval = absl::Milliseconds(5);
  BurstTrimmer trimmer([&] { return work.load(); }, [&] { ++trims; }, options);
  trimmer.Start();
  work = 7;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (trims.load() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(trims.load(), 1);
  trimmer.Stop();
  trimmer.Stop();
}

}  // namespace
}  // namespace coach::cmd
