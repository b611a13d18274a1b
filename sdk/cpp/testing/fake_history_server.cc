#include "sdk/cpp/testing/fake_history_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"

namespace coach::sdk::testing {

using api::v1::GetJobLogsRequest;
using api::v1::JobHistory;
using api::v1::ListJobHistoriesRequest;
using api::v1::ListJobHistoriesResponse;
using api::v1::LogChunk;

class FakeHistoryServer::Service final : public api::v1::TrainingService::Service {
 public:
  void AddHistory(const JobHistory& history) {
    absl::MutexLock lock(&mu_);
    histories_.push_back(history);
  }
  void AddLogChunk(LogChunk chunk) {
    absl::MutexLock lock(&mu_);
    chunks_.push_back(std::move(chunk));
  }
  void InjectError(const std::string& method, grpc::Status status) {
    absl::MutexLock lock(&mu_);
    errors_.insert_or_assign(method, std::move(status));
  }

  std::vector<ListJobHistoriesRequest> history_requests() const {
    absl::MutexLock lock(&mu_);
    return history_requests_;
  }
  std::vector<GetJobLogsRequest> log_requests() const {
    absl::MutexLock lock(&mu_);
    return log_requests_;
  }

  grpc::Status ListJobHistories(grpc::ServerContext*, const ListJobHistoriesRequest* request,
                                ListJobHistoriesResponse* response) override {
    absl::MutexLock lock(&mu_);
    history_requests_.push_back(*request);
    if (std::optional<grpc::Status> error = Error("ListJobHistories")) return *error;
    std::vector<JobHistory> matching;
    for (const JobHistory& history : histories_) {
      const auto& metadata = history.job().metadata();
      if ((request->namespace_().empty() || metadata.namespace_() == request->namespace_()) &&
          (request->name().empty() || metadata.name() == request->name())) {
        matching.push_back(history);
      }
    }
    std::stable_sort(matching.begin(), matching.end(),
                     [](const JobHistory& a, const JobHistory& b) {
                       return a.deleted_time().seconds() > b.deleted_time().seconds();
                     });
    const size_t limit = request->page_size() == 0 ? 100 : request->page_size();
    for (size_t i = 0; i < matching.size() && i < limit; ++i) {
      *response->add_histories() = matching[i];
    }
    response->set_truncated(matching.size() > limit);
    return grpc::Status::OK;
  }

  grpc::Status GetJobLogs(grpc::ServerContext*, const GetJobLogsRequest* request,
                          grpc::ServerWriter<LogChunk>* writer) override {
    std::vector<LogChunk> chunks;
    {
      absl::MutexLock lock(&mu_);
      log_requests_.push_back(*request);
      if (std::optional<grpc::Status> error = Error("GetJobLogs")) return *error;
      for (const LogChunk& chunk : chunks_) {
        if (request->replica().empty() || chunk.replica() == request->replica()) {
          chunks.push_back(chunk);
        }
      }
    }
    if (chunks.empty() && !request->replica().empty()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("no replica ", request->replica()));
    }
    for (const LogChunk& chunk : chunks) {
      if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "closed");
    }
    return grpc::Status::OK;
  }

 private:
  std::optional<grpc::Status> Error(const std::string& method) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = errors_.find(method);
    if (it == errors_.end()) return std::nullopt;
    return it->second;
  }

  mutable absl::Mutex mu_;
  std::vector<ListJobHistoriesRequest> history_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<GetJobLogsRequest> log_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<JobHistory> histories_ ABSL_GUARDED_BY(mu_);
  std::vector<LogChunk> chunks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, grpc::Status> errors_ ABSL_GUARDED_BY(mu_);
};

FakeHistoryServer::FakeHistoryServer() : service_(std::make_unique<Service>()) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  EXPECT_NE(server_, nullptr) << "the fake history server did not start";
  address_ = absl::StrCat("127.0.0.1:", port);
}

FakeHistoryServer::~FakeHistoryServer() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}

std::vector<ListJobHistoriesRequest> FakeHistoryServer::history_requests() const {
  return service_->history_requests();
}

std::vector<GetJobLogsRequest> FakeHistoryServer::log_requests() const {
  return service_->log_requests();
}

void FakeHistoryServer::AddHistory(const JobHistory& history) { service_->AddHistory(history); }

void FakeHistoryServer::AddLogChunk(const std::string& replica, const std::string& data,
                                    int attempt, const std::string& source) {
  LogChunk chunk;
  chunk.set_replica(replica);
  chunk.set_data(data);
  chunk.set_attempt(attempt);
  chunk.set_source(source);
  service_->AddLogChunk(std::move(chunk));
}

void FakeHistoryServer::InjectError(const std::string& method, grpc::Status status) {
  service_->InjectError(method, std::move(status));
}

}  // namespace coach::sdk::testing
