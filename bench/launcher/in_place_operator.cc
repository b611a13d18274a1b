// A stand-in for the operator's side of coach-launch's in-place restarts, for
// bench/launcher/restart.py (figures, not a test): a gRPC TrainingService on 127.0.0.1 that
// answers every progress report at once, the way torchrun's agent decides for itself:
//   FAILED in attempt a < --max-restarts: start attempt a + 1 (in place);
//   FAILED in attempt a >= --max-restarts: exit (coach-launch exits with the worker's code).
// Anything else: the job's current attempt, neither start nor exit. The real operator decides in a
// reconcile pass once every pod of the job has reported; that time is not in these figures.
//
// Usage: in_place_operator [--max-restarts N]. Prints "port <P>" on stdout once it listens, then
// one line per launch state change, "<monotonic seconds> <attempt>/<PHASE>[/<code>]"; it ends
// when its stdin closes.
#include <grpcpp/grpcpp.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>

#include "api/v1/training_service.grpc.pb.h"

namespace {

using coach::api::v1::LaunchState;
using coach::api::v1::ReportProgressRequest;
using coach::api::v1::ReportProgressResponse;

double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

class InPlaceOperator : public coach::api::v1::TrainingService::Service {
 public:
  explicit InPlaceOperator(int max_restarts) : max_restarts_(max_restarts) {}

  grpc::Status ReportProgress(grpc::ServerContext*, const ReportProgressRequest* request,
                              ReportProgressResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    response->set_accepted(true);
    auto* directive = response->mutable_launch();
    if (!request->has_launch()) {
      directive->set_attempt(current_);
      return grpc::Status::OK;
    }
    const LaunchState& s = request->launch();
    std::string state = std::to_string(s.attempt()) + "/" + LaunchState::Phase_Name(s.phase());
    if (s.exit_code() != 0) state += "/" + std::to_string(s.exit_code());
    if (state != last_) {
      std::printf("%.6f %s\n", MonotonicSeconds(), state.c_str());
      std::fflush(stdout);
      last_ = state;
    }
    if (s.phase() == LaunchState::FAILED && s.attempt() == current_) {
      if (current_ < max_restarts_) {
        ++current_;
        directive->set_start(true);
      } else {
        directive->set_exit(true);
      }
    } else if ((s.phase() == LaunchState::FAILED || s.phase() == LaunchState::STOPPED) &&
               s.attempt() < current_) {
      directive->set_start(true);
    }
    directive->set_attempt(current_);
    return grpc::Status::OK;
  }

 private:
  const int max_restarts_;
  std::mutex mu_;
  int current_ = 0;
  std::string last_;
};

}  // namespace

int main(int argc, char** argv) {
  int max_restarts = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--max-restarts") == 0 && i + 1 < argc) {
      max_restarts = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--max-restarts N]\n", argv[0]);
      return 2;
    }
  }
  InPlaceOperator service(max_restarts);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "in_place_operator: cannot listen\n");
    return 1;
  }
  std::printf("port %d\n", port);
  std::fflush(stdout);
  std::string ignored;
  while (std::getline(std::cin, ignored)) {
  }
  server->Shutdown();
  return 0;
}
