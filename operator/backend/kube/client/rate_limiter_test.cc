#include "operator/backend/kube/client/rate_limiter.h"

#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace coach::kubeclient {
namespace {

TEST(TokenBucketTest, BurstThenQps) {
  TokenBucketRateLimiter l(10, 3);
  absl::Time start = absl::Now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.Wait());
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(50));  // the burst is free
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.Wait());
  absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(480));  // 5 more at 10/s
  EXPECT_LT(took, absl::Milliseconds(900));
}

TEST(TokenBucketTest, TryAcceptDeadlineStopAndDefaults) {
  TokenBucketRateLimiter l(1, 1);
  EXPECT_TRUE(l.TryAccept());
  EXPECT_FALSE(l.TryAccept());
  EXPECT_FALSE(l.Wait(absl::Now() + absl::Milliseconds(100)));  // would need ~1 s
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  absl::Time start = absl::Now();
  EXPECT_FALSE(l.Wait(absl::InfiniteFuture(), &stop));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  t.join();
  TokenBucketRateLimiter unlimited(0, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(unlimited.TryAccept());
  EXPECT_EQ(kDefaultQps, 20.0);
  EXPECT_EQ(kDefaultBurst, 30);
}

TEST(TokenBucketTest, ConcurrentWaitersShareTheRate) {
  TokenBucketRateLimiter l(50, 1);
  absl::Time start = absl::Now();
  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) {
    ts.emplace_back([&] {
      for (int j = 0; j < 5; ++j) l.Wait();
    });
  }
  for (auto& t : ts) t.join();
  absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(360));  // 19 after the first at 50/s = 0.38 s
  EXPECT_LT(took, absl::Milliseconds(1000));
}

}  // namespace
}  // namespace coach::kubeclient
