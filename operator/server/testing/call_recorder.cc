#include "operator/server/testing/call_recorder.h"

#include <grpcpp/server_context.h>

#include <map>

#include "api/v1/training_service.pb.h"

namespace coach::server::testing {
namespace {

using grpc::experimental::InterceptionHookPoints;

template <typename Request>
std::string Serialize(const void* request) {
  return static_cast<const Request*>(request)->SerializeAsString();
}

// GetRecvMessage() points at the method's own request type, which only the method tells.
std::string SerializedRequest(const std::string& method, const void* request) {
  static const auto* const kSerializers = new std::map<std::string, std::string (*)(const void*)>{
      {"CreateJob", &Serialize<api::v1::CreateJobRequest>},
      {"GetJob", &Serialize<api::v1::GetJobRequest>},
      {"ListJobs", &Serialize<api::v1::ListJobsRequest>},
      {"DeleteJob", &Serialize<api::v1::DeleteJobRequest>},
      {"WatchJobs", &Serialize<api::v1::WatchJobsRequest>},
      {"GetJobLogs", &Serialize<api::v1::GetJobLogsRequest>},
      {"SuspendJob", &Serialize<api::v1::SuspendJobRequest>},
      {"ResumeJob", &Serialize<api::v1::ResumeJobRequest>},
      {"DescribeJob", &Serialize<api::v1::DescribeJobRequest>},
      {"ListJobHistories", &Serialize<api::v1::ListJobHistoriesRequest>},
  };
  auto it = kSerializers->find(method);
  if (request == nullptr || it == kSerializers->end()) return "";
  return it->second(request);
}

}  // namespace

class CallRecorder::Interceptor : public grpc::experimental::Interceptor {
 public:
  Interceptor(CallRecorder* recorder, grpc::experimental::ServerRpcInfo* info)
      : recorder_(recorder), info_(info) {
    // "/coach.api.v1.TrainingService/GetJob" -> "GetJob".
    const std::string full = info->method();
    method_ = full.substr(full.rfind('/') + 1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_MESSAGE)) {
      const auto& metadata = info_->server_context()->client_metadata();
      auto header = metadata.find("authorization");
      Call call;
      call.method = method_;
      if (header != metadata.end()) {
        call.authorization.assign(header->second.data(), header->second.size());
      }
      call.request = SerializedRequest(method_, methods->GetRecvMessage());
      recorder_->Received(std::move(call));
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      recorder_->Answered(method_);
    }
    methods->Proceed();
  }

 private:
  CallRecorder* const recorder_;
  grpc::experimental::ServerRpcInfo* const info_;
  std::string method_;
};

class CallRecorder::InterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit InterceptorFactory(CallRecorder* recorder) : recorder_(recorder) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new Interceptor(recorder_, info);
  }

 private:
  CallRecorder* const recorder_;
};

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> CallRecorder::Factory() {
  return std::make_unique<InterceptorFactory>(this);
}

std::vector<std::string> CallRecorder::calls() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> methods;
  for (const Call& call : calls_) methods.push_back(call.method);
  return methods;
}

std::vector<std::string> CallRecorder::authorizations() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> values;
  for (const Call& call : calls_) values.push_back(call.authorization);
  return values;
}

std::vector<std::string> CallRecorder::RequestBytes(const std::string& method) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> requests;
  for (const Call& call : calls_) {
    if (call.method == method) requests.push_back(call.request);
  }
  return requests;
}

void CallRecorder::OnAnswered(std::function<void(const std::string& method)> hook) {
  absl::MutexLock lock(&mu_);
  on_answered_ = std::move(hook);
}

void CallRecorder::Received(Call call) {
  absl::MutexLock lock(&mu_);
  calls_.push_back(std::move(call));
}

void CallRecorder::Answered(const std::string& method) {
  std::function<void(const std::string&)> hook;
  {
    absl::MutexLock lock(&mu_);
    hook = on_answered_;
  }
  if (hook) hook(method);
}

}  // namespace coach::server::testing
