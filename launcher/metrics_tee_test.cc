#include "launcher/metrics_tee.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"

namespace coach::launcher {
namespace {

std::string TmpPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
}

std::string ReadFd(int fd) {
  std::string out;
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

void Write(int fd, const std::string& s) { ASSERT_EQ(write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size())); }

TEST(MetricsTeeTest, CopiesLinesUnchangedAndParsesMetricLines) {
  const std::string out_path = TmpPath("tee_out"), err_path = TmpPath("tee_err");
  int out = open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  int err = open(err_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  std::mutex mu;
  std::vector<MetricLine> got;
  std::vector<int64_t> times;
  {
    MetricsTee tee(out, err, [&](const MetricLine& m, int64_t now) {
      std::lock_guard<std::mutex> lock(mu);
      got.push_back(m);
      times.push_back(now);
    });
    absl::StatusOr<int> a = tee.AddPipe();
    absl::StatusOr<int> b = tee.AddPipe();
    ASSERT_TRUE(a.ok() && b.ok());
    Write(*a, "hello\ncoach-metric name=loss value=0.5 ");
    absl::SleepFor(absl::Milliseconds(50));
    Write(*a, "step=1\ncoach-metric name=loss value=x\n");
    Write(*b, "coach-metric name=acc value=0.9 step=2 timestamp=1234\nno newline at the end");
    tee.Finish(absl::Seconds(2));
    EXPECT_EQ(tee.metric_lines(), 2);
    EXPECT_EQ(tee.malformed_lines(), 1);
  }
  const std::string copied = ReadFd(out);
  EXPECT_NE(copied.find("hello\n"), std::string::npos);
  EXPECT_NE(copied.find("coach-metric name=loss value=0.5 step=1\n"), std::string::npos) << copied;
  EXPECT_NE(copied.find("coach-metric name=loss value=x\n"), std::string::npos);
  EXPECT_NE(copied.find("coach-metric name=acc value=0.9 step=2 timestamp=1234\n"),
            std::string::npos);
  EXPECT_NE(copied.find("no newline at the end"), std::string::npos);
  EXPECT_NE(ReadFd(err).find("value \"x\" is not a number"), std::string::npos);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].name == "loss") {
      EXPECT_EQ(got[i].step, 1);
      EXPECT_GT(times[i], absl::ToUnixMillis(absl::Now()) - 60000);
    } else {
      EXPECT_EQ(got[i].name, "acc");
      EXPECT_EQ(got[i].timestamp_ms, 1234);
    }
  }
  close(out);
  close(err);
}

TEST(MetricsTeeTest, FinishDoesNotWaitForeverOnAPipeHeldOpen) {
  MetricsTee tee(STDOUT_FILENO, STDERR_FILENO, [](const MetricLine&, int64_t) {});
  absl::StatusOr<int> a = tee.AddPipe();
  ASSERT_TRUE(a.ok());
  int held = dup(*a);  // a worker's child still holding the pipe
  const absl::Time start = absl::Now();
  tee.Finish(absl::Milliseconds(300));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  close(held);
}

TEST(MetricsTeeTest, TailsAMetricsFile) {
  const std::string path = TmpPath("metrics_file");
  std::remove(path.c_str());
  std::mutex mu;
  std::vector<MetricLine> got;
  MetricsTee tee(STDOUT_FILENO, STDERR_FILENO, [&](const MetricLine& m, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    got.push_back(m);
  });
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
  tee.Finish(absl::Seconds(1));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].step, 2);
  EXPECT_DOUBLE_EQ(got[1].value, 2);
}

}  // namespace
}  // namespace coach::launcher
