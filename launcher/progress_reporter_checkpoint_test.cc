// Checkpoint on notice in coach-launch's progress reports, against a fake operator: the request
// in any answer reaches the callback, and the pod's answer goes at once, with every report after,
// again after a failure, and at the end.

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "common/testing/test_dir.h"
#include "launcher/progress_reporter.h"
#include "launcher/testing/fake_operator.h"

namespace coach::launcher {
namespace {

using testing::CheckpointRequestOf;

bool WaitFor(const std::function<bool()>& cond) {
  return ::coach::testing::Eventually(cond, absl::Seconds(20), absl::Milliseconds(5));
}

api::v1::CheckpointReport Saved(int64_t id, int64_t step) {
  api::v1::CheckpointReport r;
  r.set_request_id(id);
  r.set_saved(true);
  r.set_step(step);
  return r;
}

class ProgressReporterCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = ::coach::testing::FreshTestDir("checkpoint-report") + "/token";
    std::ofstream(token_file_) << "token\n";
  }

  // Neither the poll nor a heartbeat comes within a test: only a change sends.
  std::unique_ptr<ProgressReporter> Reporter() {
    ProgressReporterConfig config;
    config.namespace_ = "team-a";
    config.pod = "ddp-worker-1";
    config.token_file = token_file_;
    config.poll = absl::Seconds(30);
    config.tracker.min_interval = absl::Milliseconds(50);
    config.unavailable_retries = 0;
    return std::make_unique<ProgressReporter>(config, operator_.NewSender(), nullptr);
  }

  size_t Count() const { return operator_.Requests().size(); }

  testing::FakeOperator operator_;
  std::string token_file_;
};

TEST_F(ProgressReporterCheckpointTest, TheRequestInAnyAnswerReachesTheCallback) {
  std::mutex mu;
  std::vector<int64_t> ids;
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->SetCheckpointRequestCallback([&](const api::v1::CheckpointRequest& r) {
    std::lock_guard<std::mutex> lock(mu);
    ids.push_back(r.id());
  });
  // A dropped report's answer, to a pod that does not restart in place.
  operator_.SetAnswer(
      [](const api::v1::ReportProgressRequest&) { return api::v1::ReportProgressResponse(); });
  operator_.SetCheckpoint(CheckpointRequestOf(5, absl::Now() + absl::Minutes(1)));
  reporter->Start();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return !ids.empty();
  }));
  reporter->SetCheckpointRequestCallback(nullptr);
  reporter->Finish(absl::ZeroDuration());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(ids, std::vector<int64_t>{5});
}

TEST_F(ProgressReporterCheckpointTest, TheAnswerGoesAtOnceAndWithEveryReportAfter) {
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  ASSERT_TRUE(WaitFor([&] { return Count() == 1; }));  // the first heartbeat
  EXPECT_FALSE(operator_.Requests()[0].has_checkpoint());
  reporter->SetCheckpointReport(Saved(5, 40));
  ASSERT_TRUE(WaitFor([&] { return Count() == 2; }));
  EXPECT_EQ(operator_.Requests()[1].checkpoint().request_id(), 5);
  EXPECT_EQ(operator_.Requests()[1].checkpoint().step(), 40);
  // The next report, whatever sends it, carries it too.
  api::v1::LaunchState running;
  running.set_phase(api::v1::LaunchState::RUNNING);
  reporter->SetLaunchState(running);
  ASSERT_TRUE(WaitFor([&] { return Count() == 3; }));
  reporter->Finish(absl::ZeroDuration());
  EXPECT_TRUE(operator_.Requests()[2].has_launch());
  EXPECT_TRUE(operator_.Requests()[2].has_checkpoint());
  EXPECT_EQ(operator_.CheckpointReports().size(), 1u);
}

TEST_F(ProgressReporterCheckpointTest, AFailedAnswerGoesAgainAfterTheMinimumInterval) {
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  int refused = 0;
  operator_.SetAnswer([&refused](const api::v1::ReportProgressRequest& r)
                          -> absl::StatusOr<api::v1::ReportProgressResponse> {
    if (r.has_checkpoint() && refused++ == 0) return absl::InternalError("try again");
    api::v1::ReportProgressResponse accepted;
    accepted.set_accepted(true);
    return accepted;
  });
  reporter->Start();
  ASSERT_TRUE(WaitFor([&] { return Count() == 1; }));
  const absl::Time set = absl::Now();
  reporter->SetCheckpointReport(Saved(6, 1));
  // Not the 30 s heartbeat: the failed answer is due again like changed progress.
  ASSERT_TRUE(WaitFor([&] { return Count() == 3; }));
  EXPECT_GE(absl::Now() - set, absl::Milliseconds(50));
  EXPECT_LT(absl::Now() - set, absl::Seconds(5));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(Count(), 3u);  // answered: nothing more until progress or a heartbeat
  reporter->Finish(absl::ZeroDuration());
  EXPECT_TRUE(operator_.Requests()[2].has_checkpoint());
}

TEST_F(ProgressReporterCheckpointTest, AnAnswerNotYetSentGoesAtTheEnd) {
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->SetCheckpointReport(Saved(7, 3));
  reporter->Finish(absl::Seconds(1));
  ASSERT_EQ(Count(), 1u);
  EXPECT_EQ(operator_.Requests()[0].checkpoint().request_id(), 7);
  // Without one, the end sends nothing new.
  std::unique_ptr<ProgressReporter> quiet = Reporter();
  quiet->Finish(absl::Seconds(1));
  EXPECT_EQ(Count(), 1u);
}

}  // namespace
}  // namespace coach::launcher
