#include "operator/backend/local/process/progress_tracker.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/metrics/metric_line.h"

namespace coach::backend::local {
namespace {

metrics::MetricLine Line(const std::string& name, double value, int64_t step) {
  metrics::MetricLine m;
  m.name = name;
  m.value = value;
  m.step = step;
  return m;
}

const absl::Time kStart = absl::FromUnixSeconds(1700000000);
const absl::Duration kMono = absl::Hours(24);

TEST(ProgressTrackerTest, HighestStepLatestValuesAndTime) {
  ProgressTracker t;
  EXPECT_FALSE(t.has_progress());
  t.Observe(Line("loss", 0.9, 5), kStart, kMono);
  t.Observe(Line("loss", 0.7, 7), kStart + absl::Seconds(1), kMono + absl::Seconds(1));
  t.Observe(Line("epoch", 1, 1), kStart + absl::Seconds(2), kMono + absl::Seconds(2));
  EXPECT_TRUE(t.has_progress());
  EXPECT_EQ(t.record().step, 7) << "the highest, not the latest";
  EXPECT_EQ(t.record().metrics, (std::map<std::string, double>{{"loss", 0.7}, {"epoch", 1}}));
  EXPECT_EQ(t.record().time, kStart + absl::Seconds(2));
}

TEST(ProgressTrackerTest, AtMostSixtyFourNamesTheFirstOnes) {
  ProgressTracker t;
  for (int i = 0; i < 100; ++i) t.Observe(Line(absl::StrCat("m", i), i, i), kStart, kMono);
  EXPECT_EQ(t.record().metrics.size(), static_cast<size_t>(kMaxProgressMetrics));
  EXPECT_EQ(t.record().metrics.count("m63"), 1u);
  EXPECT_EQ(t.record().metrics.count("m64"), 0u);
  t.Observe(Line("m0", 42, 0), kStart, kMono);
  EXPECT_EQ(t.record().metrics.at("m0"), 42) << "a known name is still updated";
  EXPECT_EQ(t.record().step, 99);
}

TEST(ProgressTrackerTest, NonFiniteValuesGoInTheRecord) {
  ProgressTracker t;
  t.Observe(Line("loss", 0.5, 1), kStart, kMono);
  t.Observe(Line("loss", std::numeric_limits<double>::infinity(), 2), kStart, kMono);
  EXPECT_EQ(t.record().metrics.at("loss"), std::numeric_limits<double>::infinity())
      << "a diverged loss is worth reporting";
}

TEST(ProgressTrackerTest, StepsPerSecondAsOfTheLatestLine) {
  ProgressTracker t(absl::Seconds(60));
  t.Observe(Line("loss", 1, 0), kStart, kMono);
  EXPECT_EQ(t.record().steps_per_second, 0) << "unknown from one line";
  t.Observe(Line("loss", 1, 20), kStart + absl::Seconds(10), kMono + absl::Seconds(10));
  EXPECT_NEAR(t.record().steps_per_second, 2, 1e-9);
  // A line without a new step lowers it: the window runs to the latest line.
  t.Observe(Line("loss", 1, 20), kStart + absl::Seconds(20), kMono + absl::Seconds(20));
  EXPECT_NEAR(t.record().steps_per_second, 1, 1e-9);
}

TEST(ProgressTrackerTest, AWallClockStepMakesNoRate) {
  ProgressTracker t(absl::Seconds(60));
  t.Observe(Line("loss", 1, 0), kStart, kMono);
  t.Observe(Line("loss", 1, 10), kStart - absl::Hours(1), kMono + absl::Seconds(10));
  EXPECT_NEAR(t.record().steps_per_second, 1, 1e-9);
  EXPECT_EQ(t.record().time, kStart - absl::Hours(1)) << "the time is the wall clock's";
}

}  // namespace
}  // namespace coach::backend::local
