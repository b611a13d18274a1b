#include "launcher/metrics_tee.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

using metrics::MetricLine;

std::string TmpPath(const std::string& name) {
  return ::coach::testing::FreshTestDir("metrics_tee") + "/" + name;
}

TEST(MetricsTeeTest, ParsesMetricLinesAndReportsMalformedOnes) {
  std::vector<MetricLine> got;
  std::vector<int64_t> times;
  std::vector<std::string> reports;
  MetricsTee tee(
      [&](const MetricLine& m, int64_t now) {
        got.push_back(m);
        times.push_back(now);
      },
      [&](const std::string& line) { reports.push_back(line); });
  tee.OnLine("hello\n");
  tee.OnLine("coach-metric name=loss value=0.5 step=1\n");
  tee.OnLine("coach-metric name=loss value=x\n");
  tee.OnLine("coach-metric name=acc value=0.9 step=2 timestamp=1234\r\n");
  tee.Finish();
  EXPECT_EQ(tee.metric_lines(), 2);
  EXPECT_EQ(tee.malformed_lines(), 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].find("value \"x\" is not a number"), std::string::npos) << reports[0];
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "loss");
  EXPECT_EQ(got[0].step, 1);
  EXPECT_GT(times[0], absl::ToUnixMillis(absl::Now()) - 60000);  // read "now", not 0
  EXPECT_EQ(got[1].name, "acc");
  EXPECT_EQ(got[1].timestamp_ms, 1234);
}

TEST(MetricsTeeTest, ReportsOnlyTheFirstFewMalformedLines) {
  int reports = 0;
  MetricsTee tee([](const MetricLine&, int64_t) {}, [&](const std::string&) { ++reports; });
  for (int i = 0; i < 20; ++i) tee.OnLine("coach-metric value=1\n");
  EXPECT_EQ(tee.malformed_lines(), 20);
  EXPECT_EQ(reports, 5);
}

TEST(MetricsTeeTest, TailsAMetricsFile) {
  const std::string path = TmpPath("metrics_file");
  std::remove(path.c_str());
  std::mutex mu;
  std::vector<MetricLine> got;
  MetricsTee tee(
      [&](const MetricLine& m, int64_t) {
        std::lock_guard<std::mutex> lock(mu);
        got.push_back(m);
      },
      nullptr);
  tee.WatchFile(path, absl::Milliseconds(20));
  absl::SleepFor(absl::Milliseconds(60));  // the file appears later
  std::ofstream f(path);
  f << "coach-metric name=a value=1 step=1\ncoach-metric name=a value=2" << std::flush;
  absl::SleepFor(absl::Milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(got.size(), 1u);  // the second line is not complete yet
  }
  f << " step=2\n" << std::flush;
  tee.Finish();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].step, 2);
  EXPECT_DOUBLE_EQ(got[1].value, 2);
}

}  // namespace
}  // namespace coach::launcher
