#pragma once

// FakeTrainingService: an in-memory TrainingService for SDK and CLI tests, served by
// FakeServer on 127.0.0.1:<free port>. Records every request and the authorization
// metadata it came with; errors can be injected per method; WatchJobs follows a script.

#include <grpcpp/server.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/v1/training_service.grpc.pb.h"

namespace coach::sdk::testing {

// One WatchJobs call's behaviour: send `events` (each after `delay`), then end with
// `end` — or, with hang, stay open until the client cancels.
struct WatchScript {
  std::vector<api::v1::JobEvent> events;
  absl::Duration delay = absl::ZeroDuration();
  grpc::Status end = grpc::Status::OK;
  bool hang = false;
};

class FakeTrainingService final : public api::v1::TrainingService::Service {
 public:
  // Stored jobs, keyed "namespace/name". CreateJob adds; DeleteJob removes.
  void AddJob(const api::v1::TrainingJob& job);
  std::optional<api::v1::TrainingJob> FindJob(const std::string& namespace_,
                                              const std::string& name) const;

  // The next `times` calls of `method` ("GetJob", "WatchJobs", ...) fail with `status`.
  void InjectError(const std::string& method, grpc::Status status, int times = 1);
  // GetJob answers these in order (the last one repeats) instead of the store.
  void ScriptGetJob(std::vector<api::v1::TrainingJob> jobs);
  // Each WatchJobs call takes the next script; with none left it sends ADDED for the
  // matching stored jobs and hangs.
  void ScriptWatch(WatchScript script);
  // CreateJob with a manifest returns this job (the fake parses nothing).
  void SetManifestResult(api::v1::TrainingJob job);
  // GetJobLogs sends these chunks, filtered by the request's replica.
  void AddLogChunk(const std::string& replica, const std::string& data);
  void SetDescribe(api::v1::DescribeJobResponse response);

  // Recorded calls: method names in order, and the authorization header of each
  // ("" when absent).
  std::vector<std::string> calls() const;
  std::vector<std::string> authorizations() const;
  std::vector<api::v1::CreateJobRequest> create_requests() const;
  std::vector<api::v1::ListJobsRequest> list_requests() const;
  std::vector<api::v1::GetJobLogsRequest> log_requests() const;
  std::vector<api::v1::WatchJobsRequest> watch_requests() const;

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
  // Records the call; returns the injected error, if any, for it.
  std::optional<grpc::Status> Record(const std::string& method, grpc::ServerContext* context);

  mutable std::mutex mutex_;
  std::map<std::string, api::v1::TrainingJob> jobs_;
  std::map<std::string, std::deque<grpc::Status>> errors_;
  std::deque<api::v1::TrainingJob> get_script_;
  std::deque<WatchScript> watch_scripts_;
  api::v1::TrainingJob manifest_result_;
  std::vector<std::pair<std::string, std::string>> logs_;
  api::v1::DescribeJobResponse describe_;
  std::vector<std::string> calls_;
  std::vector<std::string> authorizations_;
  std::vector<api::v1::CreateJobRequest> create_requests_;
  std::vector<api::v1::ListJobsRequest> list_requests_;
  std::vector<api::v1::GetJobLogsRequest> log_requests_;
  std::vector<api::v1::WatchJobsRequest> watch_requests_;
};

// Serves a FakeTrainingService over plaintext on 127.0.0.1 with a free port.
class FakeServer {
 public:
  FakeServer();
  ~FakeServer();
  FakeTrainingService& service() { return service_; }
  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }

 private:
  FakeTrainingService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

// A job with the given conditions set True, in order (for status tests).
api::v1::TrainingJob JobWithConditions(const std::string& namespace_, const std::string& name,
                                       const std::vector<std::string>& true_conditions,
                                       const std::string& message = "");

}  // namespace coach::sdk::testing
