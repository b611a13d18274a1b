#include "bench/local/operator_session.h"

#include <utility>

#include "absl/time/clock.h"

namespace coach::bench {

void AddOperatorFlags(CLI::App& app, OperatorFlags* flags) {
  app.add_option("--server", flags->server,
                 "An operator already running (host:port); default: start one");
  app.add_option("--operator-pid", flags->operator_pid, "Its pid, for CPU/RSS (with --server)");
  app.add_option("--operator", flags->operator_path, "coach-operator binary (default: bazel-bin)");
  app.add_option("--shim", flags->shim_path, "coach-replica-shim binary (default: bazel-bin)");
  app.add_option("--operator-workers", flags->operator_workers, "--workers of the operator");
  app.add_option("--log-level", flags->log_level, "--log-level of the operator");
  app.add_flag("--keep-state", flags->keep_state, "Keep the operator's state dir");
}

absl::StatusOr<std::unique_ptr<OperatorSession>> OperatorSession::Open(OperatorFlags flags,
                                                                       const std::string& ns) {
  std::unique_ptr<OperatorSession> session(new OperatorSession());
  if (flags.operator_path.empty()) flags.operator_path = FindBazelBin("operator/coach-operator");
  if (flags.shim_path.empty()) {
    flags.shim_path = FindBazelBin("operator/backend/local/coach-replica-shim");
  }
  std::string server = flags.server;
  session->operator_pid_ = flags.operator_pid;
  if (server.empty()) {
    OperatorProcess::Options o;
    o.operator_path = flags.operator_path;
    o.shim_path = flags.shim_path;
    o.log_level = flags.log_level;
    o.workers = flags.operator_workers;
    absl::StatusOr<std::unique_ptr<OperatorProcess>> started = OperatorProcess::Start(o);
    if (!started.ok()) return started.status();
    session->operator_ = std::move(started).value();
    server = session->operator_->server();
    session->operator_pid_ = session->operator_->pid();
  }
  session->flags_ = std::move(flags);
  sdk::ConnectionOptions conn;
  conn.server = server;
  // An operator of this session authenticates callers with the token it made.
  if (session->operator_ != nullptr) {
    conn.token_file = session->operator_->state_dir() + "/api-token";
  }
  absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> client = sdk::TrainingClient::Create(conn);
  if (!client.ok()) return client.status();
  session->client_ = std::move(client).value();
  for (int i = 0; i < 100; ++i) {
    sdk::ListOptions lo;
    lo.namespace_ = ns;
    lo.page_size = 1;
    if (session->client_->ListJobs(lo).ok()) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return session;
}

void OperatorSession::StopOperator() {
  if (operator_ != nullptr) operator_->Stop(flags_.keep_state);
}

}  // namespace coach::bench
