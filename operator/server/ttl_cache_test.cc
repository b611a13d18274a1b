#include "operator/server/ttl_cache.h"

#include <gtest/gtest.h>

#include "common/testing/fake_clock.h"

namespace coach::server {
namespace {

TEST(TtlCacheTest, EntriesExpire) {
  FakeClock clock;
  TtlCache<int> cache(&clock, 10);
  cache.Put("a", 1, absl::Seconds(10));
  EXPECT_EQ(cache.Get("a"), 1);
  clock.Advance(absl::Seconds(9));
  EXPECT_EQ(cache.Get("a"), 1);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(cache.Get("a"), std::nullopt);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(TtlCacheTest, ZeroTtlStoresNothing) {
  FakeClock clock;
  TtlCache<int> cache(&clock, 10);
  cache.Put("a", 1, absl::ZeroDuration());
  EXPECT_EQ(cache.Get("a"), std::nullopt);
}

TEST(TtlCacheTest, BoundedExpiredFirstThenSoonest) {
  FakeClock clock;
  TtlCache<int> cache(&clock, 2);
  cache.Put("short", 1, absl::Seconds(1));
  cache.Put("long", 2, absl::Seconds(100));
  clock.Advance(absl::Seconds(2));
  cache.Put("new", 3, absl::Seconds(50));  // "short" has expired: it goes
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Get("long"), 2);
  cache.Put("newer", 4, absl::Seconds(50));  // full, none expired: "new" expires soonest
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Get("new"), std::nullopt);
  EXPECT_EQ(cache.Get("long"), 2);
  EXPECT_EQ(cache.Get("newer"), 4);
  cache.Put("long", 5, absl::Seconds(1));  // replacing a key evicts nothing
  EXPECT_EQ(cache.Get("newer"), 4);
  EXPECT_EQ(cache.Get("long"), 5);
}

}  // namespace
}  // namespace coach::server
