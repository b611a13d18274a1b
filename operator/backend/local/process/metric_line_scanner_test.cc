#include "operator/backend/local/process/metric_line_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace coach::backend::local {
namespace {

class MetricLineScannerTest : public ::testing::Test {
 protected:
  void Feed(absl::string_view data) {
    scanner_.Feed(data, [this](const metrics::MetricLine& m) {
      seen_.push_back(absl::StrCat(m.name, "=", m.value, "@", m.step));
    });
  }
  MetricLineScanner scanner_;
  std::vector<std::string> seen_;
};

TEST_F(MetricLineScannerTest, FindsWholeMetricLinesAmongOthers) {
  Feed("epoch 1\ncoach-metric name=loss value=0.5 step=3\nnoise coach-metric name=x value=1\n");
  Feed("coach-metric name=acc value=0.25 step=4\r\ncoach-metricx name=y value=1\n");
  EXPECT_EQ(seen_, (std::vector<std::string>{"loss=0.5@3", "acc=0.25@4"}));
  EXPECT_EQ(scanner_.malformed(), 0);
}

TEST_F(MetricLineScannerTest, LinesCutAnywhereAcrossReads) {
  const std::string text =
      "progress 10%\rprogress 20%\ncoach-metric name=loss value=0.5 step=3\n"
      "coach-metric name=loss value=0.25 step=4\n";
  for (char c : text) Feed(absl::string_view(&c, 1));
  EXPECT_EQ(seen_, (std::vector<std::string>{"loss=0.5@3", "loss=0.25@4"}));
}

// Past other lines the scanner jumps to the next line that starts like a metric line, also
// when that start is cut between two reads.
TEST_F(MetricLineScannerTest, APrefixCutBetweenReadsAfterOtherLines) {
  Feed("y\ny\ny\n\n\ncoach-me");
  Feed("tric name=a value=1\ny\nyy\ncoach-metric name=b value=2\nnoise\nc");
  Feed("oach-metric name=c value=3\n\n");
  Feed("coach-metric name=d value=4\n");
  EXPECT_EQ(seen_, (std::vector<std::string>{"a=1@0", "b=2@0", "c=3@0", "d=4@0"}));
  std::string many;
  for (int i = 0; i < 100000; ++i) many += "y\n";
  Feed(many + "coach-metric name=e value=5\n" + many);
  EXPECT_EQ(seen_.back(), "e=5@0");
}

TEST_F(MetricLineScannerTest, TheUnterminatedTailIsNotALine) {
  Feed("coach-metric name=loss value=0.5 step=3");
  EXPECT_TRUE(seen_.empty());
  Feed("\n");
  EXPECT_EQ(seen_, (std::vector<std::string>{"loss=0.5@3"}));
}

TEST_F(MetricLineScannerTest, MalformedMetricLinesAreCountedAndDropped) {
  Feed("coach-metric name=loss value=abc\ncoach-metric value=1\ncoach-metric name=ok value=1\n");
  EXPECT_EQ(seen_, (std::vector<std::string>{"ok=1@0"}));
  EXPECT_EQ(scanner_.malformed(), 2);
}

// Only a bounded part of a line is ever held, and a long line does not hide the next one.
TEST_F(MetricLineScannerTest, OverlongLinesAreDropped) {
  const std::string long_metric = absl::StrCat("coach-metric name=loss value=1 pad=",
                                               std::string(MetricLineScanner::kMaxLine, 'x'));
  Feed(long_metric.substr(0, 100));
  Feed(long_metric.substr(100));
  Feed("\ncoach-metric name=after value=2\n");
  Feed(std::string(3 * MetricLineScanner::kMaxLine, 'y'));
  Feed("\ncoach-metric name=later value=3\n");
  EXPECT_EQ(seen_, (std::vector<std::string>{"after=2@0", "later=3@0"}));
  EXPECT_EQ(scanner_.malformed(), 0);
}

}  // namespace
}  // namespace coach::backend::local
