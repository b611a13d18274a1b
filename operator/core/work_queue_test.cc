#include "operator/core/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/testing/fake_clock.h"

namespace coach::core {
namespace {

WorkQueue::Options Fast() {
  WorkQueue::Options o;
  o.poll_interval = absl::Milliseconds(2);
  o.backoff_base = absl::Seconds(1);
  o.backoff_cap = absl::Seconds(8);
  return o;
}

bool WaitDepth(WorkQueue& q, size_t n) {
  for (int i = 0; i < 2000; ++i) {
    if (q.Depth() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST(WorkQueueTest, DeduplicatesQueuedKeys) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.Depth(), 2u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsProcessedAgainAfterDone) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  q.Add("a");
  auto k = q.Get();
  q.Add("a");
  EXPECT_EQ(q.Depth(), 0u);  // not handed to a second worker
  q.Done(*k);
  EXPECT_EQ(q.Depth(), 1u);
  EXPECT_EQ(*q.Get(), "a");
}

TEST(WorkQueueTest, AddAtFiresWhenTheFakeClockReachesIt) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  q.AddAt("a", clock.Now() + absl::Seconds(30));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(q.Depth(), 0u);
  EXPECT_EQ(q.DelayedCount(), 1u);
  clock.Advance(absl::Seconds(30));
  EXPECT_TRUE(WaitDepth(q, 1));
  EXPECT_EQ(q.DelayedCount(), 0u);
}

TEST(WorkQueueTest, BackoffIsExponentialAndCapped) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  EXPECT_EQ(q.AddRateLimited("a"), absl::Seconds(1));
  EXPECT_EQ(q.AddRateLimited("a"), absl::Seconds(2));
  EXPECT_EQ(q.AddRateLimited("a"), absl::Seconds(4));
  EXPECT_EQ(q.AddRateLimited("a"), absl::Seconds(8));
  EXPECT_EQ(q.AddRateLimited("a"), absl::Seconds(8));
  q.Forget("a");
  EXPECT_EQ(q.BackoffFor("a"), absl::Seconds(1));
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(WaitDepth(q, 1));
}

// A backoff is a duration: setting the wall clock back neither delays it nor, set forward
// alone, hastens it.
TEST(WorkQueueTest, BackoffRunsOnTheMonotonicClock) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  const absl::Time t0 = clock.Now();
  EXPECT_EQ(q.AddRateLimited("a"), absl::Seconds(1));
  clock.Set(t0 - absl::Hours(1));  // the wall clock set back; no time has elapsed
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(q.Depth(), 0u);
  EXPECT_EQ(q.DelayedCount(), 1u);
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(WaitDepth(q, 1));
  EXPECT_EQ(q.DelayedCount(), 0u);
}

// A key waiting for a wall time and for a duration is queued by whichever comes first, once.
TEST(WorkQueueTest, AddAtAndAddAfterTheEarlierWins) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  q.AddAfter("a", absl::Seconds(10));
  q.AddAfter("a", absl::Seconds(20));  // the earlier end is kept
  q.AddAt("a", clock.Now() + absl::Seconds(30));
  q.AddAt("b", clock.Now() + absl::Seconds(5));
  q.AddAfter("b", absl::Seconds(30));
  EXPECT_EQ(q.DelayedCount(), 2u);
  clock.Advance(absl::Seconds(5));
  EXPECT_TRUE(WaitDepth(q, 1));
  EXPECT_EQ(*q.Get(), "b");
  clock.Advance(absl::Seconds(5));
  EXPECT_TRUE(WaitDepth(q, 1));
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(q.DelayedCount(), 0u);
  q.AddAfter("c", absl::ZeroDuration());  // due at once
  EXPECT_EQ(q.Depth(), 1u);
}

TEST(WorkQueueTest, ShutDownReleasesWaitingWorkers) {
  ::coach::FakeClock clock;
  WorkQueue q(&clock, Fast());
  std::atomic<bool> returned{false};
  std::thread t([&] {
    EXPECT_FALSE(q.Get().has_value());
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  q.ShutDown();
  t.join();
  EXPECT_TRUE(returned);
}

}  // namespace
}  // namespace coach::core
