// ReportProgress through the real gRPC server: the pods' door, and the only one their tokens
// open.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/training_service.grpc.pb.h"
#include "operator/core/testing/core_fixture.h"
#include "operator/server/grpc_server.h"
#include "operator/server/pod_token_auth.h"
#include "operator/server/progress_intake.h"
#include "operator/server/testing/token_reviewer.h"
#include "operator/server/training_service_impl.h"

namespace coach::server {
namespace {

class KeepingReceiver : public backend::ProgressReceiver {
 public:
  absl::StatusOr<backend::ProgressReceipt> ReceiveProgress(
      const backend::PodReport& report) override {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(report);
    return backend::ProgressReceipt{true, std::nullopt};
  }
  std::mutex mu;
  std::vector<backend::PodReport> reports;
};

class ProgressServiceTest : public ::testing::Test {
 protected:
  void Serve(bool with_intake) {
    service_ = std::make_unique<TrainingServiceImpl>(env_.service.get(), TokenAuth(""));
    if (with_intake) service_->SetProgressIntake(&intake_);
    GrpcServerOptions options;
    options.listen = "127.0.0.1:0";
    auto started = GrpcServer::Start(service_.get(), options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started).value();
    stub_ = api::v1::TrainingService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    env_.watchers.Shutdown();
    if (server_) server_->Shutdown();
  }

  grpc::Status Report(const std::string& token, const std::string& pod,
                      api::v1::ReportProgressResponse* response) {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + token);
    api::v1::ReportProgressRequest request;
    request.set_namespace_("team-a");
    request.set_pod(pod);
    request.set_step(3);
    return stub_->ReportProgress(&context, request, response);
  }

  core::testing::CoreEnv env_;
  testing::TokenReviewer reviewer_;
  PodTokenAuth auth_{&reviewer_};
  KeepingReceiver receiver_;
  ProgressIntake intake_{&auth_, &receiver_};
  std::unique_ptr<TrainingServiceImpl> service_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<api::v1::TrainingService::Stub> stub_;
};

TEST_F(ProgressServiceTest, APodReportsForItselfOverGrpc) {
  Serve(true);
  const std::string token = reviewer_.Issue("team-a", "default", "ddp-master-0", "uid-m0",
                                            {kProgressAudience}, absl::Now() + absl::Hours(1));
  api::v1::ReportProgressResponse response;
  grpc::Status s = Report(token, "ddp-master-0", &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(response.accepted());
  ASSERT_EQ(receiver_.reports.size(), 1u);
  EXPECT_EQ(receiver_.reports[0].pod_uid, "uid-m0");
  // For another pod: PERMISSION_DENIED.
  s = Report(token, "ddp-worker-0", &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(receiver_.reports.size(), 1u);
}

TEST_F(ProgressServiceTest, APodsTokenOpensNoOtherCall) {
  Serve(true);
  // The shared-token mode here lets everybody do everything (--api-auth=none), and still the
  // pod's token is refused outside ReportProgress.
  const std::string token = reviewer_.Issue("team-a", "default", "ddp-master-0", "uid-m0",
                                            {kProgressAudience}, absl::Now() + absl::Hours(1));
  grpc::ClientContext get_context;
  get_context.AddMetadata("authorization", "Bearer " + token);
  api::v1::GetJobRequest get;
  get.set_namespace_("team-a");
  get.set_name("ddp");
  api::v1::TrainingJob job;
  grpc::Status s = stub_->GetJob(&get_context, get, &job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_NE(s.error_message().find("may only report progress"), std::string::npos);

  grpc::ClientContext list_context;
  list_context.AddMetadata("authorization", "Bearer " + token);
  api::v1::ListJobsResponse jobs;
  s = stub_->ListJobs(&list_context, api::v1::ListJobsRequest(), &jobs);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  // Without a token the same call goes through (none mode).
  grpc::ClientContext anonymous;
  EXPECT_TRUE(stub_->ListJobs(&anonymous, api::v1::ListJobsRequest(), &jobs).ok());
}

TEST_F(ProgressServiceTest, WithoutAnIntakeTheCallIsUnimplemented) {
  Serve(false);
  api::v1::ReportProgressResponse response;
  grpc::Status s = Report("anything", "p", &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(s.error_message().find("--progress-report-address"), std::string::npos);
}

}  // namespace
}  // namespace coach::server
