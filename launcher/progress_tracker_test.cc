#include "launcher/progress_tracker.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace coach::launcher {
namespace {

absl::Duration S(double seconds) { return absl::Seconds(seconds); }

metrics::MetricLine Line(const std::string& name, double value, int64_t step) {
  metrics::MetricLine m;
  m.name = name;
  m.value = value;
  m.step = step;
  return m;
}

TEST(ProgressTrackerTest, NothingBeforeTheFirstHeartbeatIsDueThenTheNewestProgress) {
  ProgressTracker t;
  // Nothing printed yet: the first look sends a heartbeat (the pod is alive).
  std::optional<ProgressSnapshot> first = t.Due(S(0));
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->heartbeat);
  t.Sent(*first, S(0));
  EXPECT_FALSE(t.Due(S(1)).has_value());

  t.Observe(Line("loss", 2.0, 10), S(1));
  t.Observe(Line("loss", 1.5, 20), S(1.5));
  t.Observe(Line("lr", 0.1, 5), S(1.5));
  // Within 2 s of the last send: wait.
  EXPECT_FALSE(t.Due(S(1.9)).has_value());
  std::optional<ProgressSnapshot> s = t.Due(S(2));
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->heartbeat);
  EXPECT_EQ(s->step, 20);
  EXPECT_EQ(s->metrics.at("loss"), 1.5);
  EXPECT_EQ(s->metrics.at("lr"), 0.1);
  t.Sent(*s, S(2));
  EXPECT_FALSE(t.Due(S(5)).has_value());
}

TEST(ProgressTrackerTest, AHeartbeatEveryThirtySecondsWhileNothingChanges) {
  ProgressTracker t;
  t.Observe(Line("loss", 1, 1), S(0));
  t.Sent(*t.Due(S(0)), S(0));
  EXPECT_FALSE(t.Due(S(29.9)).has_value());
  std::optional<ProgressSnapshot> beat = t.Due(S(30));
  ASSERT_TRUE(beat.has_value());
  EXPECT_TRUE(beat->heartbeat);
  EXPECT_EQ(beat->step, 1);  // the state goes along
  t.Sent(*beat, S(30));
  // A change after a heartbeat waits only for the 2 s.
  t.Observe(Line("loss", 0.5, 2), S(31));
  EXPECT_FALSE(t.Due(S(31.5)).has_value());
  EXPECT_FALSE(t.Due(S(32))->heartbeat);
}

TEST(ProgressTrackerTest, AFailedReportsChangeIsDueAgainAfterTheInterval) {
  ProgressTracker t;
  t.Sent(*t.Due(S(0)), S(0));
  t.Observe(Line("loss", 1, 7), S(1));
  std::optional<ProgressSnapshot> s = t.Due(S(2));
  ASSERT_TRUE(s.has_value());
  t.Failed(S(2));
  // Not asked more often than the interval, and then the change again, not a heartbeat.
  EXPECT_FALSE(t.Due(S(3.9)).has_value());
  std::optional<ProgressSnapshot> again = t.Due(S(4));
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(again->heartbeat);
  EXPECT_EQ(again->step, 7);
  EXPECT_TRUE(t.Unsent(S(4)).has_value());
  t.Sent(*again, S(4));
  EXPECT_FALSE(t.Due(S(6)).has_value());
  EXPECT_FALSE(t.Unsent(S(6)).has_value());
  // A failed heartbeat: the next one after the heartbeat interval.
  std::optional<ProgressSnapshot> beat = t.Due(S(34));
  ASSERT_TRUE(beat.has_value());
  EXPECT_TRUE(beat->heartbeat);
  t.Failed(S(34));
  EXPECT_FALSE(t.Due(S(63.9)).has_value());
  EXPECT_TRUE(t.Due(S(64))->heartbeat);
}

TEST(ProgressTrackerTest, TheHighestStepTheLatestValueAndOnlyFiniteOnes) {
  ProgressTracker t;
  t.Observe(Line("loss", 1, 50), S(0));
  t.Observe(Line("loss", 0.9, 40), S(0));  // a rank behind: the step stays, the value moves
  t.Observe(Line("loss", std::numeric_limits<double>::quiet_NaN(), 60), S(0));
  t.Observe(Line("acc", std::numeric_limits<double>::infinity(), 0), S(0));
  t.Observe(Line("neg", 1, -5), S(0));
  std::optional<ProgressSnapshot> s = t.Due(S(0));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, 60);
  EXPECT_EQ(s->metrics.at("loss"), 0.9);
  EXPECT_EQ(s->metrics.count("acc"), 0u);
  EXPECT_EQ(s->metrics.at("neg"), 1);
}

TEST(ProgressTrackerTest, AtMostSixtyFourNames) {
  ProgressTracker t;
  for (int i = 0; i < 70; ++i) t.Observe(Line("m" + std::to_string(i), i, 0), S(0));
  EXPECT_EQ(t.Due(S(0))->metrics.size(), 64u);
  EXPECT_EQ(t.dropped_names(), 6);
}

TEST(ProgressTrackerTest, StepsPerSecondOverTheWindowFallToZeroWhenStepsStop) {
  ProgressTrackerOptions o;
  o.rate_window = absl::Seconds(10);
  ProgressTracker t(o);
  for (int i = 0; i <= 20; ++i) t.Observe(Line("loss", 1.0 / (i + 1), i * 4), S(i));  // 4 steps/s
  std::optional<ProgressSnapshot> s = t.Due(S(20));
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(s->steps_per_second, 4.0, 0.01);
  t.Sent(*s, S(20));
  // Steps stopped: the estimate falls, and is 0 once the window holds no advance.
  EXPECT_LT(t.Due(S(50))->steps_per_second, 1e-9);
  EXPECT_FALSE(t.Unsent(S(50)).has_value());
}

TEST(ProgressTrackerTest, UnsentIgnoresTheIntervals) {
  ProgressTracker t;
  t.Observe(Line("loss", 1, 1), S(0));
  t.Sent(*t.Due(S(0)), S(0));
  t.Observe(Line("loss", 0.5, 2), S(0.5));
  EXPECT_FALSE(t.Due(S(0.5)).has_value());
  std::optional<ProgressSnapshot> last = t.Unsent(S(0.5));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->step, 2);
  EXPECT_FALSE(last->heartbeat);
}

TEST(ProgressTrackerTest, CurrentIgnoresTheIntervalsAndIsAHeartbeatWhenNothingChanged) {
  ProgressTracker t;
  t.Observe(Line("loss", 1, 1), S(0));
  t.Sent(*t.Due(S(0)), S(0));
  ProgressSnapshot beat = t.Current(S(0.1));
  EXPECT_TRUE(beat.heartbeat);
  EXPECT_EQ(beat.step, 1);
  t.Observe(Line("loss", 0.5, 2), S(0.2));
  ProgressSnapshot change = t.Current(S(0.2));
  EXPECT_FALSE(change.heartbeat);
  EXPECT_EQ(change.step, 2);
}

TEST(ProgressTrackerTest, IntervalsChangeWhileItRuns) {
  ProgressTracker t;
  EXPECT_EQ(t.UntilDue(S(0)), absl::ZeroDuration());  // never sent: due at once
  t.Sent(*t.Due(S(0)), S(0));
  EXPECT_EQ(t.UntilDue(S(10)), S(20));
  t.SetIntervals(S(0.5), S(0.5));
  EXPECT_EQ(t.UntilDue(S(0.25)), S(0.25));
  EXPECT_FALSE(t.Due(S(0.4)).has_value());
  std::optional<ProgressSnapshot> beat = t.Due(S(0.5));
  ASSERT_TRUE(beat.has_value());
  EXPECT_TRUE(beat->heartbeat);
  t.Sent(*beat, S(0.5));
  t.Observe(Line("loss", 1, 3), S(0.6));
  EXPECT_EQ(t.UntilDue(S(0.6)), S(0.4));
  EXPECT_FALSE(t.Due(S(0.9)).has_value());
  EXPECT_FALSE(t.Due(S(1))->heartbeat);
}

TEST(ProgressTrackerTest, RestartForgetsTheProgressAndWhatWasUnsent) {
  ProgressTrackerOptions o;
  o.rate_window = absl::Seconds(10);
  ProgressTracker t(o);
  for (int i = 0; i <= 10; ++i) t.Observe(Line("loss", 1, 100 + i * 10), S(i));
  std::optional<ProgressSnapshot> before = t.Due(S(10));
  ASSERT_TRUE(before.has_value());
  t.Observe(Line("loss", 0.5, 300), S(10.5));
  t.Restart();
  // The last attempt's step 300 never goes out, and the snapshot taken before the restart,
  // answered after it, does not hide what the new attempt prints.
  EXPECT_FALSE(t.Unsent(S(11)).has_value());
  t.Sent(*before, S(11));
  ProgressSnapshot fresh = t.Current(S(11));
  EXPECT_TRUE(fresh.heartbeat);
  EXPECT_EQ(fresh.step, 0);
  EXPECT_TRUE(fresh.metrics.empty());
  EXPECT_EQ(fresh.steps_per_second, 0);
  // The new attempt resumes from a checkpoint at a lower step: that is its progress.
  t.Observe(Line("loss", 0.75, 120), S(12));
  std::optional<ProgressSnapshot> resumed = t.Due(S(13));
  ASSERT_TRUE(resumed.has_value());
  EXPECT_FALSE(resumed->heartbeat);
  EXPECT_EQ(resumed->step, 120);
  EXPECT_EQ(resumed->metrics.at("loss"), 0.75);
}

}  // namespace
}  // namespace coach::launcher
