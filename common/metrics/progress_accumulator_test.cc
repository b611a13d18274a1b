#include "common/metrics/progress_accumulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"

namespace coach::metrics {
namespace {

absl::Duration S(double seconds) { return absl::Seconds(seconds); }

MetricLine Line(const std::string& name, double value, int64_t step) {
  MetricLine m;
  m.name = name;
  m.value = value;
  m.step = step;
  return m;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ProgressAccumulatorTest, TheHighestStepTheLatestValueAndOnlyFiniteOnes) {
  ProgressAccumulator a;
  EXPECT_EQ(a.step(), 0);
  EXPECT_TRUE(a.Observe(Line("loss", 1, 50), S(0)));
  // A rank behind: the step stays, the value moves.
  EXPECT_TRUE(a.Observe(Line("loss", 0.9, 40), S(0)));
  EXPECT_TRUE(a.Observe(Line("loss", kNaN, 60), S(0))) << "the step is a change";
  EXPECT_FALSE(a.Observe(Line("acc", kInf, 0), S(0)));
  EXPECT_TRUE(a.Observe(Line("neg", 1, -5), S(0)));
  EXPECT_FALSE(a.Observe(Line("neg", 1, -5), S(0))) << "nothing new";
  EXPECT_EQ(a.step(), 60);
  EXPECT_EQ(a.metrics(), (std::map<std::string, double>{{"loss", 0.9}, {"neg", 1}}));
}

TEST(ProgressAccumulatorTest, NeverBelowZero) {
  ProgressAccumulator a;
  a.Observe(Line("loss", 1, -7), S(0));
  EXPECT_EQ(a.step(), 0);
  EXPECT_EQ(a.StepsPerSecond(S(5)), 0);
}

TEST(ProgressAccumulatorTest, NonFiniteValuesKeptWhenAsked) {
  ProgressAccumulatorOptions o;
  o.keep_non_finite = true;
  ProgressAccumulator a(o);
  EXPECT_TRUE(a.Observe(Line("loss", 1, 0), S(0)));
  EXPECT_TRUE(a.Observe(Line("loss", kNaN, 0), S(0)));
  EXPECT_FALSE(a.Observe(Line("loss", kNaN, 0), S(0))) << "NaN again is no change";
  EXPECT_TRUE(a.Observe(Line("acc", -kInf, 0), S(0)));
  EXPECT_TRUE(std::isnan(a.metrics().at("loss")));
  EXPECT_EQ(a.metrics().at("acc"), -kInf);
}

TEST(ProgressAccumulatorTest, AtMostMaxMetricsNamesTheFirstOnes) {
  ProgressAccumulator a;
  for (int i = 0; i < 100; ++i) a.Observe(Line(absl::StrCat("m", i), i, i), S(0));
  EXPECT_EQ(a.metrics().size(), 64u);
  EXPECT_EQ(a.metrics().count("m63"), 1u);
  EXPECT_EQ(a.metrics().count("m64"), 0u);
  EXPECT_EQ(a.dropped_names(), 36);
  EXPECT_TRUE(a.Observe(Line("m0", 42, 0), S(0)));
  EXPECT_EQ(a.metrics().at("m0"), 42) << "a known name is still updated";
  EXPECT_EQ(a.step(), 99);
  EXPECT_EQ(a.dropped_names(), 36);
}

TEST(ProgressAccumulatorTest, StepsPerSecondOverTheWindow) {
  ProgressAccumulatorOptions o;
  o.rate_window = absl::Seconds(60);
  ProgressAccumulator a(o);
  const absl::Duration start = absl::Hours(24);
  a.Observe(Line("loss", 1, 0), start);
  EXPECT_EQ(a.StepsPerSecond(start), 0) << "unknown from one line";
  // 10 steps a second for five minutes, one line per step.
  absl::Duration at = start;
  for (int i = 1; i <= 3000; ++i) {
    at += absl::Milliseconds(100);
    a.Observe(Line("loss", 1, i), at);
  }
  EXPECT_NEAR(a.StepsPerSecond(at), 10, 0.01);
  // Then 2 a second for two minutes: the window sees the new pace.
  for (int i = 1; i <= 240; ++i) {
    at += absl::Milliseconds(500);
    a.Observe(Line("loss", 1, 3000 + i), at);
  }
  EXPECT_NEAR(a.StepsPerSecond(at), 2, 0.1);
  // Lines without a new step for longer than the window: no steps in it.
  at += absl::Seconds(61);
  a.Observe(Line("loss", 1, 3240), at);
  EXPECT_EQ(a.StepsPerSecond(at), 0);
  // A pause is a slower rate, not none: one step after 90 s.
  at += absl::Seconds(29);
  a.Observe(Line("loss", 1, 3241), at);
  EXPECT_NEAR(a.StepsPerSecond(at), 1.0 / 90, 1e-6);
}

TEST(ProgressAccumulatorTest, TheRateFallsToZeroWhenAskedAfterStepsStop) {
  ProgressAccumulatorOptions o;
  o.rate_window = absl::Seconds(10);
  ProgressAccumulator a(o);
  for (int i = 0; i <= 20; ++i) a.Observe(Line("loss", 1.0 / (i + 1), i * 4), S(i));  // 4/s
  EXPECT_NEAR(a.StepsPerSecond(S(20)), 4.0, 0.01);
  // No line since: the estimate falls as the window moves on, and is 0 once it holds no advance.
  EXPECT_NEAR(a.StepsPerSecond(S(25)), 20.0 / 10, 0.01);
  EXPECT_EQ(a.StepsPerSecond(S(50)), 0);
}

}  // namespace
}  // namespace coach::metrics
