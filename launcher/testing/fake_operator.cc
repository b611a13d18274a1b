#include "launcher/testing/fake_operator.h"

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "api/v1/training_service.grpc.pb.h"

namespace coach::launcher::testing {

class FakeOperator::Service : public api::v1::TrainingService::Service {
 public:
  explicit Service(FakeOperator* op) : op_(op) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~Service() override { server_->Shutdown(); }

  grpc::Status ReportProgress(grpc::ServerContext*, const api::v1::ReportProgressRequest* request,
                              api::v1::ReportProgressResponse* response) override {
    absl::StatusOr<api::v1::ReportProgressResponse> answer = op_->Receive(*request);
    if (!answer.ok()) {
      return grpc::Status(static_cast<grpc::StatusCode>(answer.status().code()),
                          std::string(answer.status().message()));
    }
    *response = *std::move(answer);
    return grpc::Status::OK;
  }

  int port() const { return port_; }

 private:
  FakeOperator* const op_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

namespace {

class FakeSender : public ProgressSender {
 public:
  explicit FakeSender(FakeOperator* op) : op_(op) {}
  absl::StatusOr<api::v1::ReportProgressResponse> Send(
      const api::v1::ReportProgressRequest& request, const std::string&, absl::Duration) override {
    return op_->Receive(request);
  }
  void Reconnect() override {}

 private:
  FakeOperator* const op_;
};

}  // namespace

FakeOperator::FakeOperator() = default;

FakeOperator::~FakeOperator() { service_.reset(); }

std::unique_ptr<ProgressSender> FakeOperator::NewSender() {
  return std::make_unique<FakeSender>(this);
}

std::string FakeOperator::Serve() {
  service_ = std::make_unique<Service>(this);
  return absl::StrCat("127.0.0.1:", service_->port());
}

void FakeOperator::SetCheckpoint(std::optional<api::v1::CheckpointRequest> request) {
  absl::MutexLock lock(&mu_);
  checkpoint_ = std::move(request);
}

std::vector<api::v1::CheckpointReport> FakeOperator::CheckpointReports() const {
  std::vector<api::v1::CheckpointReport> reports;
  for (const api::v1::ReportProgressRequest& r : Requests()) {
    if (!r.has_checkpoint()) continue;
    if (!reports.empty() &&
        reports.back().SerializeAsString() == r.checkpoint().SerializeAsString()) {
      continue;
    }
    reports.push_back(r.checkpoint());
  }
  return reports;
}

void FakeOperator::SetAnswer(Answer answer) {
  absl::MutexLock lock(&mu_);
  answer_ = std::move(answer);
}

std::vector<api::v1::ReportProgressRequest> FakeOperator::Requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<api::v1::LaunchState> FakeOperator::LaunchStates() const {
  std::vector<api::v1::LaunchState> states;
  for (const api::v1::ReportProgressRequest& r : Requests()) {
    if (!r.has_launch()) continue;
    if (!states.empty() && states.back().SerializeAsString() == r.launch().SerializeAsString()) {
      continue;
    }
    states.push_back(r.launch());
  }
  return states;
}

absl::StatusOr<api::v1::ReportProgressResponse> FakeOperator::Receive(
    const api::v1::ReportProgressRequest& request) {
  absl::MutexLock lock(&mu_);
  requests_.push_back(request);
  absl::StatusOr<api::v1::ReportProgressResponse> answer;
  if (answer_) {
    answer = answer_(request);
  } else {
    answer.emplace().set_accepted(true);
  }
  if (answer.ok() && checkpoint_) *answer->mutable_checkpoint() = *checkpoint_;
  return answer;
}

api::v1::CheckpointRequest CheckpointRequestOf(int64_t id, absl::Time deadline) {
  api::v1::CheckpointRequest r;
  r.set_id(id);
  r.mutable_deadline()->set_seconds(absl::ToUnixSeconds(deadline));
  r.mutable_deadline()->set_nanos(static_cast<int32_t>(absl::ToUnixNanos(deadline) -
                                                       absl::ToUnixSeconds(deadline) * 1000000000));
  return r;
}

api::v1::ReportProgressResponse Directive(int attempt, bool start, bool exit, bool accepted) {
  api::v1::ReportProgressResponse r;
  r.set_accepted(accepted);
  r.mutable_launch()->set_attempt(attempt);
  r.mutable_launch()->set_start(start);
  r.mutable_launch()->set_exit(exit);
  return r;
}

std::string Describe(const api::v1::LaunchState& state) {
  std::string s =
      absl::StrCat(state.attempt(), "/", api::v1::LaunchState::Phase_Name(state.phase()));
  if (state.exit_code() != 0) absl::StrAppend(&s, "/", state.exit_code());
  return s;
}

}  // namespace coach::launcher::testing
