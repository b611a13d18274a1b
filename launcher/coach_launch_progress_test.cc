// The coach-launch binary reports its worker's progress to an in-process gRPC server standing in
// for the operator: the metric lines the worker prints arrive as ReportProgress calls with the
// pod's token, and the last one before the launcher exits.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/training_service.grpc.pb.h"
#include "common/testing/test_dir.h"
#include "launcher/testing/spawn.h"

namespace {

constexpr char kLauncher[] = "launcher/coach-launch";

class RecordingService : public coach::api::v1::TrainingService::Service {
 public:
  grpc::Status ReportProgress(grpc::ServerContext* context,
                              const coach::api::v1::ReportProgressRequest* request,
                              coach::api::v1::ReportProgressResponse* response) override {
    std::lock_guard<std::mutex> lock(mu);
    requests.push_back(*request);
    auto it = context->client_metadata().find("authorization");
    if (it != context->client_metadata().end()) {
      tokens.emplace_back(it->second.data(), it->second.size());
    }
    response->set_accepted(true);
    return grpc::Status::OK;
  }
  std::mutex mu;
  std::vector<coach::api::v1::ReportProgressRequest> requests;
  std::vector<std::string> tokens;
};

// Runs coach-launch with `env` and `args` to the end; its stderr.
std::string RunLauncher(const std::vector<std::string>& args,
                        std::map<std::string, std::string> env, int* exit_code) {
  const std::string err = coach::testing::FreshTestDir("progress-launch") + "/stderr";
  const pid_t pid = coach::launcher::testing::Spawn(kLauncher, args, std::move(env), err);
  int status = 0;
  waitpid(pid, &status, 0);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CoachLaunchProgressTest, TheWorkersMetricLinesReachTheOperator) {
  RecordingService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string token = coach::testing::FreshTestDir("progress-token") + "/token";
  std::ofstream(token) << "pod-token-0123456789\n";

  int code = -1;
  const std::string err =
      RunLauncher({"--", "/bin/sh", "-c",
                   "echo 'coach-metric name=loss value=0.5 step=7'; sleep 0.5; "
                   "echo 'coach-metric name=loss value=0.25 step=9'; sleep 0.2"},
                  {{"COACH_PROGRESS_ADDRESS", absl::StrCat("127.0.0.1:", port)},
                   {"COACH_PROGRESS_TOKEN_FILE", token},
                   {"COACH_POD_NAMESPACE", "team-a"},
                   {"COACH_POD_NAME", "ddp-master-0"}},
                  &code);
  server->Shutdown();
  EXPECT_EQ(code, 0) << err;
  std::lock_guard<std::mutex> lock(service.mu);
  ASSERT_FALSE(service.requests.empty()) << err;
  const coach::api::v1::ReportProgressRequest& last = service.requests.back();
  EXPECT_EQ(last.namespace_(), "team-a");
  EXPECT_EQ(last.pod(), "ddp-master-0");
  EXPECT_EQ(last.step(), 9);
  EXPECT_EQ(last.metrics().at("loss"), 0.25);
  for (const std::string& t : service.tokens) EXPECT_EQ(t, "Bearer pod-token-0123456789");
  EXPECT_NE(err.find("coach-launch: progress: "), std::string::npos) << err;
  EXPECT_NE(err.find("0 failed"), std::string::npos) << err;
}

TEST(CoachLaunchProgressTest, NoOperatorNeverFailsTheTraining) {
  int code = -1;
  const std::string err =
      RunLauncher({"--", "/bin/sh", "-c", "echo 'coach-metric name=loss value=1 step=1'"},
                  {{"COACH_PROGRESS_ADDRESS", "127.0.0.1:1"},
                   {"COACH_PROGRESS_TOKEN_FILE", "/nonexistent/token"},
                   {"COACH_POD_NAMESPACE", "team-a"},
                   {"COACH_POD_NAME", "p"}},
                  &code);
  EXPECT_EQ(code, 0) << err;
  // Incomplete settings: said once, and the training runs.
  const std::string incomplete =
      RunLauncher({"--", "/bin/true"}, {{"COACH_PROGRESS_ADDRESS", "127.0.0.1:1"}}, &code);
  EXPECT_EQ(code, 0) << incomplete;
  EXPECT_NE(incomplete.find("progress not reported to the operator: COACH_PROGRESS_TOKEN_FILE"),
            std::string::npos)
      << incomplete;
}

}  // namespace
