#pragma once

// The gRPC TrainingService: adapts requests to core::JobService and absl codes to gRPC
// codes, nothing else. Every call is authenticated first and then authorized for what it
// does (call_authorizer.h: with --api-auth=kubernetes, Kubernetes RBAC decides).
// Streaming calls end when the client cancels, the stream breaks, or BeginShutdown().
// ReportProgress is the replica pods' own door (progress_intake.h: a pod's token of audience
// "coach", good for nothing else: every other call refuses it with PERMISSION_DENIED); without
// SetProgressIntake it is UNIMPLEMENTED.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "api/v1/training_service.grpc.pb.h"
#include "operator/core/job_service.h"
#include "operator/server/api_auth.h"
#include "operator/server/call_authorizer.h"
#include "operator/server/progress_intake.h"
#include "operator/server/token_auth.h"

namespace coach::server {

class TrainingServiceImpl final : public api::v1::TrainingService::Service {
 public:
  // `auth` decides who may call and what they may do.
  TrainingServiceImpl(core::JobService* jobs, std::unique_ptr<ApiAuth> auth)
      : jobs_(jobs), auth_(std::move(auth)), calls_(auth_.get(), jobs) {}
  // The shared token (none when empty): everybody who presents it may do everything.
  TrainingServiceImpl(core::JobService* jobs, TokenAuth auth)
      : TrainingServiceImpl(jobs, std::make_unique<SharedTokenAuth>(std::move(auth))) {}

  // Ends every open WatchJobs/GetJobLogs stream with UNAVAILABLE soon.
  void BeginShutdown() { shutting_down_ = true; }
  // Where ReportProgress goes (not owned; outlives this). Set before serving.
  void SetProgressIntake(ProgressIntake* intake) { progress_ = intake; }

  grpc::Status CreateJob(grpc::ServerContext* context, const api::v1::CreateJobRequest* request,
                         api::v1::TrainingJob* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const api::v1::GetJobRequest* request,
                      api::v1::TrainingJob* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const api::v1::ListJobsRequest* request,
                        api::v1::ListJobsResponse* response) override;
  grpc::Status DeleteJob(grpc::ServerContext* context, const api::v1::DeleteJobRequest* request,
                         api::v1::DeleteJobResponse* response) override;
  grpc::Status WatchJobs(grpc::ServerContext* context, const api::v1::WatchJobsRequest* request,
                         grpc::ServerWriter<api::v1::JobEvent>* writer) override;
  grpc::Status GetJobLogs(grpc::ServerContext* context, const api::v1::GetJobLogsRequest* request,
                          grpc::ServerWriter<api::v1::LogChunk>* writer) override;
  grpc::Status SuspendJob(grpc::ServerContext* context, const api::v1::SuspendJobRequest* request,
                          api::v1::TrainingJob* response) override;
  grpc::Status ResumeJob(grpc::ServerContext* context, const api::v1::ResumeJobRequest* request,
                         api::v1::TrainingJob* response) override;
  grpc::Status DescribeJob(grpc::ServerContext* context, const api::v1::DescribeJobRequest* request,
                           api::v1::DescribeJobResponse* response) override;
  grpc::Status ListJobHistories(grpc::ServerContext* context,
                                const api::v1::ListJobHistoriesRequest* request,
                                api::v1::ListJobHistoriesResponse* response) override;
  grpc::Status ReportProgress(grpc::ServerContext* context,
                              const api::v1::ReportProgressRequest* request,
                              api::v1::ReportProgressResponse* response) override;

 private:
  // The caller, from the `authorization` metadata.
  grpc::Status Authenticate(grpc::ServerContext* context, UserInfo* user);
  // Authenticate, then ForJob: the start of every call that names one job.
  grpc::Status AuthorizeJobCall(grpc::ServerContext* context, ApiCall call, const std::string& ns,
                                const std::string& name);

  core::JobService* const jobs_;
  const std::unique_ptr<ApiAuth> auth_;
  CallAuthorizer calls_;
  ProgressIntake* progress_ = nullptr;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace coach::server
