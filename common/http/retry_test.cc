#include "common/http/retry.h"

#include "gtest/gtest.h"

namespace coach::http {
namespace {

TEST(RetryAfterTest, Seconds) {
  EXPECT_EQ(ParseRetryAfterSeconds("3"), absl::Seconds(3));
  EXPECT_EQ(ParseRetryAfterSeconds(" 0 \r\n"), absl::ZeroDuration());
  EXPECT_FALSE(ParseRetryAfterSeconds("").has_value());
  EXPECT_FALSE(ParseRetryAfterSeconds("-1").has_value());
  EXPECT_FALSE(ParseRetryAfterSeconds("Sun, 06 Nov 1994 08:49:47 GMT").has_value());
}

TEST(RetryAfterTest, SecondsOrDate) {
  const absl::Time now = absl::FromUnixSeconds(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(ParseRetryAfter("3", now), absl::Seconds(3));
  EXPECT_EQ(ParseRetryAfter(" 0 ", now), absl::ZeroDuration());
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:47 GMT", now), absl::Seconds(10));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:00 GMT", now), absl::ZeroDuration());
  EXPECT_FALSE(ParseRetryAfter("", now).has_value());
  EXPECT_FALSE(ParseRetryAfter("soon", now).has_value());
  EXPECT_FALSE(ParseRetryAfter("-4", now).has_value());
}

TEST(BackoffTest, GrowsAndCaps) {
  const absl::Duration max = absl::Seconds(10);
  EXPECT_EQ(ExponentialBackoff(absl::Seconds(1), 2, max, 1), absl::Seconds(1));
  EXPECT_EQ(ExponentialBackoff(absl::Seconds(1), 2, max, 2), absl::Seconds(2));
  EXPECT_EQ(ExponentialBackoff(absl::Seconds(1), 2, max, 4), absl::Seconds(8));
  EXPECT_EQ(ExponentialBackoff(absl::Seconds(1), 2, max, 5), max);
  EXPECT_EQ(ExponentialBackoff(absl::Seconds(1), 2, max, 5000), max);  // overflow
  EXPECT_EQ(ExponentialBackoff(absl::Milliseconds(200), 2, max, 0), absl::Milliseconds(200));
}

TEST(BackoffTest, UnitRandomInRange) {
  for (int i = 0; i < 1000; ++i) {
    const double u = UnitRandom();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace coach::http
