// The launch state in coach-launch's progress reports, against a fake operator: when a state
// goes out, how often reports go while the launcher waits, what reaches the directive callback,
// and the progress of a new attempt.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/eventually.h"
#include "common/testing/test_dir.h"
#include "launcher/progress_reporter.h"
#include "launcher/testing/fake_operator.h"

namespace coach::launcher {
namespace {

using api::v1::LaunchState;
using testing::Describe;
using testing::Directive;
using ::testing::ElementsAre;

LaunchState State(int attempt, LaunchState::Phase phase, int code = 0) {
  LaunchState s;
  s.set_attempt(attempt);
  s.set_phase(phase);
  s.set_exit_code(code);
  return s;
}

metrics::MetricLine Line(int64_t step) {
  metrics::MetricLine m;
  m.name = "loss";
  m.value = 1.0 / static_cast<double>(step + 1);
  m.step = step;
  return m;
}

bool WaitFor(const std::function<bool()>& cond) {
  return ::coach::testing::Eventually(cond, absl::Seconds(20), absl::Milliseconds(5));
}

class ProgressReporterLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = ::coach::testing::FreshTestDir("launch-report") + "/token";
    std::ofstream(token_file_) << "token\n";
  }

  // Without a launch state nothing would go within the test: the heartbeat is 30 s, and the
  // thread looks only every `poll`.
  std::unique_ptr<ProgressReporter> Reporter(
      absl::Duration poll = absl::Seconds(30),
      absl::Duration launch_heartbeat = absl::Milliseconds(200)) {
    ProgressReporterConfig config;
    config.namespace_ = "team-a";
    config.pod = "ddp-worker-1";
    config.token_file = token_file_;
    config.poll = poll;
    config.tracker.min_interval = absl::Milliseconds(50);
    config.launch_heartbeat_interval = launch_heartbeat;
    config.launch_wait_interval = absl::Milliseconds(50);
    return std::make_unique<ProgressReporter>(config, operator_.NewSender(), nullptr);
  }

  size_t Count() const { return operator_.Requests().size(); }
  // The latest request; an empty one before any.
  api::v1::ReportProgressRequest Last() const {
    const auto requests = operator_.Requests();
    return requests.empty() ? api::v1::ReportProgressRequest() : requests.back();
  }

  testing::FakeOperator operator_;
  std::string token_file_;
};

TEST_F(ProgressReporterLaunchTest, ANewStateGoesAtOnceAndWithEveryReport) {
  // Neither the poll nor a heartbeat comes within the test: only the change sends.
  std::unique_ptr<ProgressReporter> reporter = Reporter(absl::Seconds(30), absl::Seconds(30));
  reporter->Start();
  ASSERT_TRUE(WaitFor([&] { return Count() == 1; }));  // the first heartbeat
  EXPECT_FALSE(operator_.Requests()[0].has_launch());
  reporter->SetLaunchState(State(0, LaunchState::RUNNING));
  ASSERT_TRUE(WaitFor([&] { return Count() == 2; }));
  reporter->SetLaunchState(State(0, LaunchState::FAILED, 3));
  ASSERT_TRUE(WaitFor([&] { return operator_.LaunchStates().size() == 2; }));
  reporter->Finish(absl::Seconds(1));
  EXPECT_EQ(operator_.Requests()[1].launch().phase(), LaunchState::RUNNING);
  std::vector<std::string> states;
  for (const LaunchState& s : operator_.LaunchStates()) states.push_back(Describe(s));
  EXPECT_THAT(states, ElementsAre("0/RUNNING", "0/FAILED/3"));
}

TEST_F(ProgressReporterLaunchTest, HeartbeatsComeOftenWhileRunningAndMoreOftenWhileWaiting) {
  std::unique_ptr<ProgressReporter> reporter = Reporter(absl::Milliseconds(10));
  reporter->Start();
  reporter->SetLaunchState(State(0, LaunchState::RUNNING));
  ASSERT_TRUE(WaitFor([&] { return Count() >= 2; }));
  size_t before = Count();
  absl::SleepFor(absl::Seconds(1));
  const size_t running = Count() - before;
  // Every 200 ms: about 5 (not one every 30 s, nor one every poll).
  EXPECT_GE(running, 3u);
  EXPECT_LE(running, 7u);
  reporter->SetLaunchState(State(0, LaunchState::STOPPED));
  ASSERT_TRUE(WaitFor([&] { return operator_.LaunchStates().size() == 2; }));
  before = Count();
  absl::SleepFor(absl::Seconds(1));
  const size_t waiting = Count() - before;
  // Every 50 ms: about 20.
  EXPECT_GE(waiting, 10u);
  EXPECT_LE(waiting, 25u);
  reporter->Finish(absl::ZeroDuration());
  // Nothing was printed: each one a heartbeat.
  for (const auto& r : operator_.Requests()) EXPECT_TRUE(r.heartbeat());
}

TEST_F(ProgressReporterLaunchTest, EveryAnswersDirectiveReachesTheCallbackDroppedOnesToo) {
  std::mutex mu;
  std::vector<std::string> answers;
  std::unique_ptr<ProgressReporter> reporter = Reporter(absl::Milliseconds(10));
  reporter->SetLaunchAnswerCallback(
      [&](const LaunchState& sent, const std::optional<api::v1::LaunchDirective>& d) {
        std::lock_guard<std::mutex> lock(mu);
        answers.push_back(
            Describe(sent) + " -> " +
            (d ? absl::StrCat(d->attempt(), d->start() ? " start" : "", d->exit() ? " exit" : "")
               : "none"));
      });
  operator_.SetAnswer([](const api::v1::ReportProgressRequest& r) {
    if (r.launch().phase() == LaunchState::FAILED) return Directive(2, true, false, false);
    api::v1::ReportProgressResponse accepted;
    accepted.set_accepted(true);
    return accepted;
  });
  reporter->Start();
  // Reports without a launch state are nobody's business but the tracker's.
  ASSERT_TRUE(WaitFor([&] { return Count() >= 1; }));
  absl::SleepFor(absl::Milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(answers.empty());
  }
  reporter->SetLaunchState(State(1, LaunchState::RUNNING));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !answers.empty();
  }));
  reporter->SetLaunchState(State(1, LaunchState::FAILED, 137));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return answers.back() == "1/FAILED/137 -> 2 start";
  }));
  // Unset: no call after this returns.
  reporter->SetLaunchAnswerCallback(nullptr);
  size_t seen;
  {
    std::lock_guard<std::mutex> lock(mu);
    seen = answers.size();
    EXPECT_EQ(answers.front(), "1/RUNNING -> none");
  }
  const size_t before = Count();
  ASSERT_TRUE(WaitFor([&] { return Count() > before + 2; }));
  reporter->Finish(absl::ZeroDuration());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(answers.size(), seen);
}

TEST_F(ProgressReporterLaunchTest, ANewAttemptsProgressStartsAfresh) {
  std::unique_ptr<ProgressReporter> reporter = Reporter(absl::Milliseconds(10));
  reporter->Start();
  reporter->SetLaunchState(State(0, LaunchState::RUNNING));
  reporter->OnMetric(Line(500));
  ASSERT_TRUE(WaitFor([&] { return Last().step() == 500; }));
  reporter->SetLaunchState(State(0, LaunchState::FAILED, 1));
  reporter->SetLaunchState(State(3, LaunchState::RUNNING));
  ASSERT_TRUE(WaitFor([&] { return Last().launch().attempt() == 3; }));
  const api::v1::ReportProgressRequest first = Last();
  EXPECT_EQ(first.step(), 0);
  EXPECT_TRUE(first.heartbeat());
  EXPECT_TRUE(first.metrics().empty());
  // The checkpoint was at step 400: lower than the last attempt's, and progress all the same.
  reporter->OnMetric(Line(400));
  ASSERT_TRUE(WaitFor([&] { return Last().step() == 400; }));
  EXPECT_FALSE(Last().heartbeat());
  reporter->Finish(absl::ZeroDuration());
}

}  // namespace
}  // namespace coach::launcher
