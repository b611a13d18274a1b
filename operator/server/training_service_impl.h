#pragma once

// The gRPC TrainingService: adapts requests to core::JobService and absl codes to gRPC
// codes, nothing else. Every call is authenticated first (when a token is configured).
// Streaming calls end when the client cancels, the stream breaks, or BeginShutdown().

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "api/v1/training_service.grpc.pb.h"
#include "operator/core/job_service.h"
#include "operator/server/token_auth.h"

namespace coach::server {

class TrainingServiceImpl final : public api::v1::TrainingService::Service {
 public:
  TrainingServiceImpl(core::JobService* jobs, TokenAuth auth)
      : jobs_(jobs), auth_(std::move(auth)) {}

  // Ends every open WatchJobs/GetJobLogs stream with UNAVAILABLE soon.
  void BeginShutdown() { shutting_down_ = true; }

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

 private:
  grpc::Status Authorize(grpc::ServerContext* context) const;

  core::JobService* const jobs_;
  const TokenAuth auth_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace coach::server
