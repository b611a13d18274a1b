#include "common/clock.h"

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"

namespace coach {
namespace {

TEST(ClockTest, RealMonotonicNeverGoesBackAndFollowsElapsedTime) {
  Clock* clock = Clock::Real();
  const absl::Duration first = clock->Monotonic();
  EXPECT_GT(first, absl::ZeroDuration());
  absl::SleepFor(absl::Milliseconds(20));
  const absl::Duration second = clock->Monotonic();
  EXPECT_GE(second - first, absl::Milliseconds(20));
  EXPECT_LT(second - first, absl::Seconds(10));
}

TEST(FakeClockTest, MonotonicMovesWithTheWallTimeAndNeverBack) {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  const absl::Duration m0 = clock.Monotonic();
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), t0 + absl::Seconds(5));
  EXPECT_EQ(clock.Monotonic(), m0 + absl::Seconds(5));
  clock.Set(t0 + absl::Seconds(30));
  EXPECT_EQ(clock.Monotonic(), m0 + absl::Seconds(30));
  // The wall clock set back (or moved back): the monotonic reading stays.
  clock.Set(t0 - absl::Hours(1));
  EXPECT_EQ(clock.Now(), t0 - absl::Hours(1));
  EXPECT_EQ(clock.Monotonic(), m0 + absl::Seconds(30));
  clock.Advance(absl::Seconds(-10));
  EXPECT_EQ(clock.Monotonic(), m0 + absl::Seconds(30));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(clock.Monotonic(), m0 + absl::Seconds(31));
}

}  // namespace
}  // namespace coach
