#include "operator/backend/local/process/progress_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "common/testing/fake_clock.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/process/progress_file.h"

namespace coach::backend::local {
namespace {

class ProgressWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { files_ = ::coach::testing::FreshTestDir("progress_writer") + "/pod."; }
  std::optional<ProgressRecord> Written() {
    absl::StatusOr<ProgressRecord> r = ReadProgressFile(files_);
    if (!r.ok()) return std::nullopt;
    return *r;
  }
  std::string files_;
  FakeClock clock_;
};

TEST_F(ProgressWriterTest, NothingBeforeTheFirstMetricLine) {
  ProgressWriter w(files_, &clock_);
  w.Feed("starting\nepoch 1\n");
  EXPECT_FALSE(w.UntilDue().has_value());
  w.WriteIfDue();
  w.Flush();
  EXPECT_EQ(w.writes(), 0);
  EXPECT_FALSE(Written().has_value());
}

TEST_F(ProgressWriterTest, AtOnceThenAtMostOncePerIntervalThenAtTheEnd) {
  ProgressWriter w(files_, &clock_, absl::Seconds(1));
  w.Feed("coach-metric name=loss value=0.5 step=3\n");
  ASSERT_EQ(w.UntilDue(), absl::ZeroDuration());
  w.WriteIfDue();
  ASSERT_TRUE(Written().has_value());
  EXPECT_EQ(Written()->step, 3);
  EXPECT_EQ(Written()->metrics.at("loss"), 0.5);
  EXPECT_EQ(Written()->time, clock_.Now());
  EXPECT_FALSE(w.UntilDue().has_value()) << "nothing pending";

  clock_.Advance(absl::Milliseconds(300));
  w.Feed("coach-metric name=loss value=0.25 step=4\n");
  EXPECT_EQ(w.UntilDue(), absl::Milliseconds(700));
  w.WriteIfDue();
  EXPECT_EQ(Written()->step, 3) << "not yet";
  clock_.Advance(absl::Milliseconds(700));
  EXPECT_EQ(w.UntilDue(), absl::ZeroDuration());
  w.WriteIfDue();
  EXPECT_EQ(Written()->step, 4);
  EXPECT_EQ(w.writes(), 2);

  clock_.Advance(absl::Milliseconds(10));
  w.Feed("coach-metric name=loss value=0.125 step=5\n");
  w.WriteIfDue();
  EXPECT_EQ(Written()->step, 4);
  w.Flush();
  EXPECT_EQ(Written()->step, 5) << "the end writes what is pending";
  EXPECT_EQ(*Written(), w.tracker().record());
  w.Flush();
  EXPECT_EQ(w.writes(), 3) << "and nothing when nothing is";
}

TEST_F(ProgressWriterTest, AFailedWriteIsTriedAgain) {
  ProgressWriter w("/nonexistent/dir/pod.", &clock_, absl::Seconds(1));
  w.Feed("coach-metric name=loss value=0.5 step=3\n");
  w.WriteIfDue();
  EXPECT_EQ(w.writes(), 0);
  EXPECT_EQ(w.UntilDue(), absl::Seconds(1)) << "still pending, after an interval";
}

}  // namespace
}  // namespace coach::backend::local
