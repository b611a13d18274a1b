#include "common/metrics/metric_line.h"

#include <gtest/gtest.h>

#include <cmath>

namespace coach::metrics {
namespace {

MetricLine Parse(absl::string_view line) {
  auto r = ParseMetricLine(line);
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r.ok() && r->has_value()) << line;
  return r.ok() && r->has_value() ? **r : MetricLine{};
}

TEST(MetricLineTest, TheExamplesFormat) {
  MetricLine m = Parse("coach-metric name=train_loss value=0.0589859 step=4\n");
  EXPECT_EQ(m.name, "train_loss");
  EXPECT_DOUBLE_EQ(m.value, 0.0589859);
  EXPECT_EQ(m.step, 4);
  EXPECT_FALSE(m.timestamp_ms.has_value());
}

TEST(MetricLineTest, AnyOrderTimestampDefaultsAndExtras) {
  MetricLine m =
      Parse("coach-metric\tstep=7  timestamp=1700000000123 value=-1.5e-3 name=a/b.c rank=0\r\n");
  EXPECT_EQ(m.name, "a/b.c");
  EXPECT_DOUBLE_EQ(m.value, -1.5e-3);
  EXPECT_EQ(m.step, 7);
  EXPECT_EQ(m.timestamp_ms, 1700000000123);
  EXPECT_EQ(Parse("coach-metric name=x value=3").step, 0);
  EXPECT_TRUE(std::isnan(Parse("coach-metric name=x value=NaN").value));
  EXPECT_TRUE(std::isinf(Parse("coach-metric name=x value=-inf").value));
}

TEST(MetricLineTest, NotMetricLines) {
  for (absl::string_view line :
       {"", "loss=1", "coach-result rank=0", "coach-metrics name=a value=1",
        " coach-metric name=a value=1", "coach-metric"}) {
    auto r = ParseMetricLine(line);
    ASSERT_TRUE(r.ok()) << line;
    EXPECT_FALSE(r->has_value()) << line;
  }
}

TEST(MetricLineTest, MalformedMetricLinesNameTheField) {
  for (auto [line, field] : std::vector<std::pair<const char*, const char*>>{
           {"coach-metric value=1", "name"},
           {"coach-metric name=a", "value"},
           {"coach-metric name=a value=abc", "value"},
           {"coach-metric name=a value=1 step=1.5", "step"},
           {"coach-metric name=a value=1 timestamp=-3", "timestamp"},
           {"coach-metric name=../a value=1", "name"},
           {"coach-metric name=a,b value=1", "name"},
           {"coach-metric name=a value=1 name=b", "name"},
           {"coach-metric name=a value=1 junk", "junk"}}) {
    auto r = ParseMetricLine(line);
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_NE(std::string(r.status().message()).find(field), std::string::npos)
        << line << ": " << r.status();
  }
}

}  // namespace
}  // namespace coach::metrics
