#pragma once

// CallRecorder: what a TrainingService server received, for tests of its clients. Installed on
// a grpc::ServerBuilder through Factory(), it records each call as the server saw it (method,
// authorization metadata, request), and runs a test's hook between a handler's answer and the
// client's receiving it, so that a test can change the server's state between two calls of a
// client without racing it.
//
// Thread-safe.

#include <grpcpp/support/server_interceptor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace coach::server::testing {

class CallRecorder {
 public:
  // For ServerBuilder::experimental().SetInterceptorCreators. The recorder must outlive the
  // server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> Factory();

  // The methods called ("GetJob", "WatchJobs", ...), in the order the calls arrived.
  std::vector<std::string> calls() const;
  // The authorization metadata of each call, in the same order ("" when absent).
  std::vector<std::string> authorizations() const;
  // The requests of `method`'s calls in order; Request is that method's request type.
  template <typename Request>
  std::vector<Request> Requests(const std::string& method) const {
    std::vector<Request> requests;
    for (const std::string& bytes : RequestBytes(method)) {
      requests.emplace_back();
      requests.back().ParseFromString(bytes);
    }
    return requests;
  }

  // Runs `hook` with the method's name once a call's handler has answered, before the answer
  // leaves the server (for a stream: when it ends). Replaces the previous hook.
  void OnAnswered(std::function<void(const std::string& method)> hook);

 private:
  class Interceptor;
  class InterceptorFactory;

  struct Call {
    std::string method;
    std::string authorization;
    std::string request;  // serialized
  };

  void Received(Call call);
  void Answered(const std::string& method);
  std::vector<std::string> RequestBytes(const std::string& method) const;

  mutable absl::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&)> on_answered_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::server::testing
