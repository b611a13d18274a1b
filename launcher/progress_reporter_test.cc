// coach-launch's progress reports against an in-process gRPC server that records what it is
// sent: the reports, the token, and what the reporter does with each kind of answer.

#include "launcher/progress_reporter.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/training_service.grpc.pb.h"
#include "common/testing/eventually.h"
#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

class RecordingService : public api::v1::TrainingService::Service {
 public:
  struct Call {
    api::v1::ReportProgressRequest request;
    std::string authorization;
  };

  grpc::Status ReportProgress(grpc::ServerContext* context,
                              const api::v1::ReportProgressRequest* request,
                              api::v1::ReportProgressResponse* response) override {
    std::lock_guard<std::mutex> lock(mu);
    Call call{*request, ""};
    auto it = context->client_metadata().find("authorization");
    if (it != context->client_metadata().end()) {
      call.authorization.assign(it->second.data(), it->second.size());
    }
    calls.push_back(call);
    if (unavailable_calls > 0) {
      --unavailable_calls;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not the leader");
    }
    response->set_accepted(true);
    return answer;
  }

  std::vector<Call> Calls() {
    std::lock_guard<std::mutex> lock(mu);
    return calls;
  }
  void Answer(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    answer = std::move(status);
  }
  // Answer() that returns how many calls came before: those got the previous answer.
  size_t AnswerFromNowOn(grpc::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    answer = std::move(status);
    return calls.size();
  }

  void UnavailableFor(int n) {
    std::lock_guard<std::mutex> lock(mu);
    unavailable_calls = n;
  }

  std::mutex mu;
  std::vector<Call> calls;
  grpc::Status answer = grpc::Status::OK;
  int unavailable_calls = 0;  // the next calls answered UNAVAILABLE before `answer`
};

class ProgressReporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    token_file_ = coach::testing::FreshTestDir("progress") + "/token";
    WriteToken("token-one");
  }
  void TearDown() override { server_->Shutdown(); }

  void WriteToken(const std::string& token) {
    std::ofstream(token_file_ + ".tmp") << token << "\n";
    std::rename((token_file_ + ".tmp").c_str(), token_file_.c_str());
  }

  std::unique_ptr<ProgressReporter> Reporter() {
    ProgressReporterConfig config;
    config.namespace_ = "team-a";
    config.pod = "ddp-worker-1";
    config.token_file = token_file_;
    config.tracker.min_interval = absl::Milliseconds(100);
    config.tracker.heartbeat_interval = absl::Milliseconds(400);
    config.poll = absl::Milliseconds(10);
    config.call_timeout = absl::Seconds(5);
    return std::make_unique<ProgressReporter>(
        config, NewGrpcProgressSender(absl::StrCat("127.0.0.1:", port_), ""),
        [this](const std::string& line) {
          std::lock_guard<std::mutex> lock(log_mu_);
          log_.push_back(line);
        });
  }

  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }

  static metrics::MetricLine Line(const std::string& name, double value, int64_t step) {
    metrics::MetricLine m;
    m.name = name;
    m.value = value;
    m.step = step;
    return m;
  }

  static bool WaitFor(const std::function<bool()>& cond) {
    return ::coach::testing::Eventually(cond, absl::Seconds(20), absl::Milliseconds(5));
  }

  RecordingService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string token_file_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(ProgressReporterTest, TheServerReceivesTheNewestProgressWithThePodsToken) {
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  // A heartbeat first: alive, nothing printed yet.
  ASSERT_TRUE(WaitFor([&] { return !service_.Calls().empty(); }));
  EXPECT_TRUE(service_.Calls()[0].request.heartbeat());

  reporter->OnMetric(Line("loss", 0.5, 100));
  reporter->OnMetric(Line("accuracy", 0.8, 100));
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& c : service_.Calls()) {
      if (c.request.step() == 100 && c.request.metrics().size() == 2) return true;
    }
    return false;
  }));
  const RecordingService::Call call = service_.Calls().back();
  EXPECT_EQ(call.request.namespace_(), "team-a");
  EXPECT_EQ(call.request.pod(), "ddp-worker-1");
  EXPECT_FALSE(call.request.heartbeat());
  EXPECT_EQ(call.request.metrics().at("loss"), 0.5);
  EXPECT_EQ(call.authorization, "Bearer token-one");

  // The kubelet rotates the token: the next report carries the new one.
  WriteToken("token-two");
  reporter->OnMetric(Line("loss", 0.25, 200));
  ASSERT_TRUE(WaitFor([&] { return service_.Calls().back().request.step() == 200; }));
  EXPECT_EQ(service_.Calls().back().authorization, "Bearer token-two");

  // Nothing new: heartbeats, with the state.
  const size_t before = service_.Calls().size();
  ASSERT_TRUE(WaitFor([&] {
    const auto calls = service_.Calls();
    return calls.size() > before && calls.back().request.heartbeat();
  }));
  EXPECT_EQ(service_.Calls().back().request.step(), 200);

  // The last progress goes out at the end even within the interval.
  reporter->OnMetric(Line("loss", 0.125, 300));
  reporter->Finish(absl::Seconds(5));
  EXPECT_EQ(service_.Calls().back().request.step(), 300);
  const ProgressReporterStats stats = reporter->stats();
  EXPECT_EQ(stats.sent, static_cast<int64_t>(service_.Calls().size()));
  EXPECT_EQ(stats.accepted, stats.sent);
  EXPECT_EQ(stats.failed, 0);
  EXPECT_TRUE(Log().empty());
}

TEST_F(ProgressReporterTest, FailuresAreCountedAndLoggedOnceAndTrainingIsNeverHeldUp) {
  service_.Answer(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours"));
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  for (int step = 1; step <= 5; ++step) {
    reporter->OnMetric(Line("loss", 1.0 / step, step));
    ASSERT_TRUE(WaitFor([&] { return reporter->stats().failed >= step; }));
  }
  EXPECT_EQ(Log().size(), 1u);
  EXPECT_NE(Log()[0].find("progress report failed (PERMISSION_DENIED): not yours"),
            std::string::npos)
      << Log()[0];
  EXPECT_EQ(Log()[0].find("token-one"), std::string::npos);
  // An unreadable token file: counted, logged once, the reporter goes on.
  std::remove(token_file_.c_str());
  const int64_t failed = reporter->stats().failed;
  reporter->OnMetric(Line("loss", 0.01, 100));
  ASSERT_TRUE(WaitFor([&] { return reporter->stats().failed > failed; }));
  ASSERT_TRUE(WaitFor([&] { return Log().size() == 2; }));
  EXPECT_NE(Log()[1].find("cannot read the token"), std::string::npos) << Log()[1];
  reporter->Finish(absl::Seconds(1));
}

TEST_F(ProgressReporterTest, AFailedReportsProgressGoesAgainNotAsAHeartbeat) {
  // The replica that does not lead answers UNAVAILABLE; the next try reaches the leader. The
  // step the failed report carried must reach it as progress: a heartbeat is none.
  service_.Answer(grpc::Status(grpc::StatusCode::UNAVAILABLE, "not the leader"));
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  reporter->OnMetric(Line("loss", 0.5, 7));
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& c : service_.Calls()) {
      if (c.request.step() == 7) return true;
    }
    return false;
  }));
  ASSERT_TRUE(WaitFor([&] { return reporter->stats().failed >= 1; }));
  const size_t refused = service_.AnswerFromNowOn(grpc::Status::OK);
  ASSERT_TRUE(WaitFor([&] { return reporter->stats().sent >= 1; }));
  reporter->Finish(absl::ZeroDuration());
  const auto calls = service_.Calls();
  ASSERT_GT(calls.size(), refused);
  const RecordingService::Call& answered = calls[refused];  // the first one answered OK
  EXPECT_EQ(answered.request.step(), 7);
  EXPECT_FALSE(answered.request.heartbeat());
}

TEST_F(ProgressReporterTest, AReplicaThatDoesNotLeadIsPassedByAtOnceOnANewConnection) {
  // Two answers from replicas that do not lead, then the leader: one report, no failure.
  service_.UnavailableFor(2);
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  reporter->OnMetric(Line("loss", 0.5, 7));
  ASSERT_TRUE(WaitFor([&] { return reporter->stats().sent >= 1; }));
  reporter->Finish(absl::ZeroDuration());
  EXPECT_EQ(reporter->stats().failed, 0);
  const auto calls = service_.Calls();
  ASSERT_GE(calls.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(calls[i].request.step(), 7) << i;
}

TEST_F(ProgressReporterTest, AnOperatorThatTakesNoReportsEndsReporting) {
  service_.Answer(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no reports here"));
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  ASSERT_TRUE(WaitFor([&] { return reporter->stats().stopped; }));
  const size_t calls = service_.Calls().size();
  reporter->OnMetric(Line("loss", 1, 1));
  absl::SleepFor(absl::Milliseconds(300));
  reporter->Finish(absl::Seconds(1));
  EXPECT_EQ(service_.Calls().size(), calls);
  ASSERT_EQ(Log().size(), 1u);
  EXPECT_NE(Log()[0].find("takes no progress reports"), std::string::npos);
}

TEST_F(ProgressReporterTest, NoServerIsOnlyCounted) {
  server_->Shutdown();
  std::unique_ptr<ProgressReporter> reporter = Reporter();
  reporter->Start();
  reporter->OnMetric(Line("loss", 1, 1));
  ASSERT_TRUE(WaitFor([&] { return reporter->stats().failed >= 2; }));
  reporter->Finish(absl::Milliseconds(100));
  EXPECT_EQ(Log().size(), 1u);
  EXPECT_NE(Log()[0].find("UNAVAILABLE"), std::string::npos) << Log()[0];
}

TEST(ProgressReporterFromEnvTest, OnOnlyWithTheAddressAndComplete) {
  auto none = ProgressReporter::FromEnv({}, nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto missing = ProgressReporter::FromEnv(
      {{"COACH_PROGRESS_ADDRESS", "coach:7450"}, {"COACH_PROGRESS_TOKEN_FILE", "/t"}}, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(missing.status()));
  EXPECT_NE(missing.status().message().find("COACH_POD_NAMESPACE"), std::string::npos);
  auto ok = ProgressReporter::FromEnv({{"COACH_PROGRESS_ADDRESS", "coach:7450"},
                                       {"COACH_PROGRESS_TOKEN_FILE", "/t"},
                                       {"COACH_POD_NAMESPACE", "ns"},
                                       {"COACH_POD_NAME", "p"}},
                                      nullptr);
  ASSERT_TRUE(ok.ok());
  EXPECT_NE(*ok, nullptr);
}

}  // namespace
}  // namespace coach::launcher
