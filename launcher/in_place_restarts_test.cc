// The in-place restart loop against a fake operator (a real ProgressReporter over a fake
// sender) and a fake runner: each case a plan of what each attempt's workers do, what the
// operator answers, and the attempts run, states reported and exit code that follow.

#include "launcher/in_place_restarts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "launcher/testing/fake_operator.h"

namespace coach::launcher {
namespace {

using api::v1::LaunchState;
using api::v1::ReportProgressRequest;
using api::v1::ReportProgressResponse;
using testing::Directive;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What the workers of one attempt do.
struct Plan {
  int exit_code = 0;           // ... at once
  bool until_stopped = false;  // run until the stop is requested
  int received_signal = 0;     // the launcher got this signal while they ran
};

// Its workers end only once `op` has seen them run: a state replaced before it went out is
// not sent (the newest state is what counts), and each case shows every state.
class FakeRunner : public AttemptRunner {
 public:
  FakeRunner(const testing::FakeOperator& op, std::map<int, Plan> plans)
      : op_(op), plans_(std::move(plans)) {}

  absl::StatusOr<SupervisionResult> Run(int attempt, const StopRequest& stop) override {
    Plan plan = plans_[attempt];
    {
      std::lock_guard<std::mutex> lock(mu_);
      attempts_.push_back(attempt);
    }
    const std::string running = absl::StrCat(attempt, "/RUNNING");
    const absl::Time seen_by = absl::Now() + absl::Seconds(20);
    while (absl::Now() < seen_by && !Seen(running)) absl::SleepFor(absl::Milliseconds(2));
    SupervisionResult result;
    result.exit_code = plan.exit_code;
    result.received_signal = plan.received_signal;
    if (plan.until_stopped) {
      const absl::Time give_up = absl::Now() + absl::Seconds(20);
      while (!stop.Requested() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(2));
      std::lock_guard<std::mutex> lock(mu_);
      stops_.push_back(stop.Requested().value_or("never asked"));
      result.stopped_on_request = stop.Requested().has_value();
      result.exit_code = result.stopped_on_request ? 143 : 99;
    }
    return result;
  }

  int WaitForSignal(absl::Duration timeout) override {
    if (int sig = signal_.exchange(0); sig != 0) return sig;
    absl::SleepFor(timeout);
    return 0;
  }

  std::vector<int> attempts() {
    std::lock_guard<std::mutex> lock(mu_);
    return attempts_;
  }
  std::vector<std::string> stops() {
    std::lock_guard<std::mutex> lock(mu_);
    return stops_;
  }
  // The next WaitForSignal returns `sig`.
  void Signal(int sig) { signal_ = sig; }

 private:
  bool Seen(const std::string& state) const {
    for (const LaunchState& s : op_.LaunchStates()) {
      if (testing::Describe(s) == state) return true;
    }
    return false;
  }

  const testing::FakeOperator& op_;
  std::map<int, Plan> plans_;
  std::mutex mu_;
  std::vector<int> attempts_;
  std::vector<std::string> stops_;
  std::atomic<int> signal_{0};
};

// The operator's answers by the launch state reported ("0/FAILED/3"); to any other state:
// the job's attempt `current`, neither start nor exit.
testing::FakeOperator::Answer ByState(int current,
                                      std::map<std::string, ReportProgressResponse> answers) {
  return
      [current, answers](const ReportProgressRequest& r) -> absl::StatusOr<ReportProgressResponse> {
        auto it = answers.find(testing::Describe(r.launch()));
        if (it != answers.end()) return it->second;
        return Directive(current, false, false);
      };
}

class InPlaceRestartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string token = ::coach::testing::FreshTestDir("in-place") + "/token";
    std::ofstream(token) << "token\n";
    ProgressReporterConfig config;
    config.namespace_ = "team-a";
    config.pod = "ddp-worker-0";
    config.token_file = token;
    config.poll = absl::Milliseconds(5);
    config.tracker.min_interval = absl::Milliseconds(20);
    config.launch_heartbeat_interval = absl::Milliseconds(50);
    config.launch_wait_interval = absl::Milliseconds(20);
    reporter_ = std::make_unique<ProgressReporter>(config, operator_.NewSender(), nullptr);
    reporter_->Start();
  }
  void TearDown() override { reporter_->Finish(absl::ZeroDuration()); }

  int Run(FakeRunner& runner, absl::Duration wait = absl::Seconds(20), int first_attempt = 0) {
    InPlaceRestartOptions options;
    options.first_attempt = first_attempt;
    options.wait = wait;
    options.poll = absl::Milliseconds(5);
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(line);
    };
    const absl::Time start = absl::Now();
    absl::StatusOr<int> code = RunInPlace(runner, *reporter_, options);
    took_ = absl::Now() - start;
    EXPECT_TRUE(code.ok()) << code.status();
    return code.value_or(-1);
  }

  std::vector<std::string> States() const {
    std::vector<std::string> states;
    for (const LaunchState& s : operator_.LaunchStates()) states.push_back(testing::Describe(s));
    return states;
  }

  std::string Log() {
    std::lock_guard<std::mutex> lock(log_mu_);
    std::string all;
    for (const std::string& l : log_) all += l + "\n";
    return all;
  }

  testing::FakeOperator operator_;
  std::unique_ptr<ProgressReporter> reporter_;
  absl::Duration took_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(InPlaceRestartsTest, AllWorkersSucceedingEndsWithoutWaiting) {
  FakeRunner runner(operator_, {{0, Plan{0}}});
  EXPECT_EQ(Run(runner), 0);
  EXPECT_THAT(runner.attempts(), ElementsAre(0));
  EXPECT_THAT(States(), ElementsAre("0/RUNNING"));
}

TEST_F(InPlaceRestartsTest, AFailedAttemptRestartsWhenTheOperatorSaysStart) {
  // The pod started in attempt 4; rank failed with 3; the operator starts attempt 6 (another
  // restart may have been folded into this one), which succeeds.
  operator_.SetAnswer(ByState(4, {{"4/FAILED/3", Directive(6, true, false)}}));
  FakeRunner runner(operator_, {{4, Plan{3}}, {6, Plan{0}}});
  EXPECT_EQ(Run(runner, absl::Seconds(20), 4), 0) << Log();
  EXPECT_THAT(runner.attempts(), ElementsAre(4, 6));
  EXPECT_THAT(States(), ElementsAre("4/RUNNING", "4/FAILED/3", "6/RUNNING"));
  EXPECT_THAT(Log(), HasSubstr("coach-launch: attempt 4 failed with code 3; waiting up to 20s"));
  EXPECT_THAT(Log(), HasSubstr("coach-launch: starting attempt 6 (in place)\n"));
}

TEST_F(InPlaceRestartsTest, OnlyALaterAttemptsStartRestarts) {
  // `start` for the attempt that failed is no restart: the launcher waits out its limit.
  operator_.SetAnswer(ByState(0, {{"0/FAILED/3", Directive(0, true, false)}}));
  FakeRunner runner(operator_, {{0, Plan{3}}});
  EXPECT_EQ(Run(runner, absl::Milliseconds(300)), 3);
  EXPECT_THAT(runner.attempts(), ElementsAre(0));
}

TEST_F(InPlaceRestartsTest, ADroppedAnswersDirectiveCounts) {
  operator_.SetAnswer(ByState(0, {{"0/FAILED/1", Directive(1, true, false, /*accepted=*/false)}}));
  FakeRunner runner(operator_, {{0, Plan{1}}, {1, Plan{0}}});
  EXPECT_EQ(Run(runner), 0) << Log();
  EXPECT_THAT(runner.attempts(), ElementsAre(0, 1));
}

TEST_F(InPlaceRestartsTest, ALaterAttemptWhileTheWorkersRunStopsThemThenStartsIt) {
  // Another pod's rank failed: the operator moves the job to attempt 2 while this pod's
  // workers still run, and starts it once they are stopped.
  operator_.SetAnswer(ByState(
      0, {{"0/RUNNING", Directive(2, false, false)}, {"0/STOPPED", Directive(2, true, false)}}));
  FakeRunner runner(operator_, {{0, Plan{0, true}}, {2, Plan{0}}});
  EXPECT_EQ(Run(runner), 0) << Log();
  EXPECT_THAT(runner.attempts(), ElementsAre(0, 2));
  EXPECT_THAT(runner.stops(), ElementsAre("the operator restarts the job in place as attempt 2"));
  EXPECT_THAT(States(), ElementsAre("0/RUNNING", "0/STOPPED", "2/RUNNING"));
  EXPECT_THAT(Log(), HasSubstr("coach-launch: attempt 0 stopped; waiting up to 20s"));
}

TEST_F(InPlaceRestartsTest, ExitEndsWithTheFailedWorkersCode) {
  operator_.SetAnswer(ByState(0, {{"0/FAILED/7", Directive(0, false, true)}}));
  FakeRunner runner(operator_, {{0, Plan{7}}});
  EXPECT_EQ(Run(runner), 7);
  EXPECT_THAT(runner.attempts(), ElementsAre(0));
  EXPECT_LT(took_, absl::Seconds(10));
  EXPECT_THAT(Log(), HasSubstr("the operator ends the job here (exit); exiting with code 7"));
}

TEST_F(InPlaceRestartsTest, ExitAfterAStopEndsWith143) {
  operator_.SetAnswer(ByState(
      0, {{"0/RUNNING", Directive(1, false, false)}, {"0/STOPPED", Directive(1, false, true)}}));
  FakeRunner runner(operator_, {{0, Plan{0, true}}});
  EXPECT_EQ(Run(runner), 143);
  EXPECT_THAT(runner.attempts(), ElementsAre(0));
}

TEST_F(InPlaceRestartsTest, AnAnswerWithoutADirectiveEndsAtOnce) {
  // An operator that does not restart this job in place: the pod's exit is its business.
  FakeRunner runner(operator_, {{0, Plan{5}}});
  EXPECT_EQ(Run(runner, absl::Seconds(20)), 5);
  EXPECT_LT(took_, absl::Seconds(5));
  EXPECT_THAT(Log(), HasSubstr("does not restart this job in place; exiting with code 5"));
}

TEST_F(InPlaceRestartsTest, AnOperatorThatTakesNoReportsEndsTheWaitAtOnce) {
  operator_.SetAnswer([](const ReportProgressRequest&) -> absl::StatusOr<ReportProgressResponse> {
    return absl::UnimplementedError("no reports here");
  });
  FakeRunner runner(operator_, {{0, Plan{5}}});
  EXPECT_EQ(Run(runner, absl::Seconds(20)), 5);
  EXPECT_LT(took_, absl::Seconds(5));
}

TEST_F(InPlaceRestartsTest, NoWordWithinTheWaitEndsWithTheCode) {
  // The operator keeps the job at attempt 0 without a word: other pods' ranks are not gone.
  operator_.SetAnswer(ByState(0, {}));
  FakeRunner runner(operator_, {{0, Plan{3}}});
  EXPECT_EQ(Run(runner, absl::Milliseconds(400)), 3);
  EXPECT_GE(took_, absl::Milliseconds(400));
  EXPECT_LT(took_, absl::Seconds(5));
  EXPECT_THAT(Log(), HasSubstr("no word from the operator within 400ms (COACH_IN_PLACE_WAIT)"));
  // The reports went on while waiting: every 20 ms here.
  int failed_reports = 0;
  for (const ReportProgressRequest& r : operator_.Requests()) {
    if (r.launch().phase() == LaunchState::FAILED) ++failed_reports;
  }
  EXPECT_GE(failed_reports, 5);
}

TEST_F(InPlaceRestartsTest, ASignalWhileWaitingEndsAtOnce) {
  operator_.SetAnswer(ByState(0, {}));
  FakeRunner runner(operator_, {{0, Plan{3}}});
  runner.Signal(SIGTERM);
  EXPECT_EQ(Run(runner, absl::Seconds(20)), 128 + SIGTERM);
  EXPECT_LT(took_, absl::Seconds(5));
  EXPECT_THAT(Log(), HasSubstr("while waiting for the operator; exiting with code 143"));
}

TEST_F(InPlaceRestartsTest, ASignalWhileTheWorkersRunNeverWaits) {
  operator_.SetAnswer(ByState(0, {}));
  FakeRunner runner(operator_, {{0, Plan{128 + SIGINT, false, SIGINT}}});
  EXPECT_EQ(Run(runner, absl::Seconds(20)), 128 + SIGINT);
  EXPECT_LT(took_, absl::Seconds(5));
  EXPECT_THAT(States(), ElementsAre("0/RUNNING"));
}

}  // namespace
}  // namespace coach::launcher
