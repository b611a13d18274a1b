#pragma once

// FakeHistoryServer: a TrainingService on 127.0.0.1:<free port> that answers ListJobHistories
// and GetJobLogs from what the test gives it, for the SDK's and the CLI's tests of the attempt
// history and of kept logs. The in-memory server (operator/server/testing/in_memory_server.h)
// runs the real service, which serves neither yet: its kept-log sources and history store are
// not there. Every other method answers UNIMPLEMENTED. Requests are recorded (the in-memory
// server's CallRecorder knows only the methods it serves).
//
// What it answers follows the API's contract (api/v1/training_service.proto):
//   ListJobHistories  the histories of the request's namespace (empty: every one) and name
//                     (empty: any), newest deletion first, at most page_size (0: 100), with
//                     truncated set when more matched.
//   GetJobLogs        the chunks given, in order, those of the request's replica when it names
//                     one; NOT_FOUND when none is left and the request names a replica.
// An injected error answers every later call of its method instead.
//
// Thread-safe.

#include <grpcpp/server.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "api/v1/training_service.grpc.pb.h"
#include "api/v1/training_service.pb.h"

namespace coach::sdk::testing {

class FakeHistoryServer {
 public:
  FakeHistoryServer();
  ~FakeHistoryServer();
  FakeHistoryServer(const FakeHistoryServer&) = delete;
  FakeHistoryServer& operator=(const FakeHistoryServer&) = delete;

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  // The requests received, in order.
  std::vector<api::v1::ListJobHistoriesRequest> history_requests() const;
  std::vector<api::v1::GetJobLogsRequest> log_requests() const;

  void AddHistory(const api::v1::JobHistory& history);
  // A chunk of `replica`'s log; `source` set makes it that replica's first chunk as the
  // service sends it.
  void AddLogChunk(const std::string& replica, const std::string& data, int attempt,
                   const std::string& source = "");
  // "ListJobHistories" or "GetJobLogs".
  void InjectError(const std::string& method, grpc::Status status);

 private:
  class Service;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace coach::sdk::testing
