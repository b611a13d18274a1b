#pragma once

// OperatorSession: the operator side of a local-backend benchmark harness. The flags that
// choose the operator (one already running, or one started for the run from bazel-bin or
// given binaries), its start, a TrainingClient once its API answers, and its stop at the
// end. Harness code shared by submit_latency and throughput; it prints nothing.

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bench/local/bench_util.h"
#include "sdk/cpp/training_client.h"

namespace coach::bench {

struct OperatorFlags {
  std::string server;         // an operator already running; empty: start one
  int operator_pid = 0;       // its pid, for CPU/RSS (with server)
  std::string operator_path;  // empty: bazel-bin next to the harness
  std::string shim_path;      // empty: bazel-bin next to the harness
  int operator_workers = 0;   // 0: the operator's default
  std::string log_level = "warn";
  bool keep_state = false;
};

// Registers --server, --operator-pid, --operator, --shim, --operator-workers, --log-level
// and --keep-state on `app`, writing into `flags`.
void AddOperatorFlags(CLI::App& app, OperatorFlags* flags);

class OperatorSession {
 public:
  // Starts an operator unless flags.server names one, connects a client and waits (up to
  // about 5 s) until ListJobs in `ns` answers, since the port may listen before the
  // service is up. The errors of OperatorProcess::Start and TrainingClient::Create; a
  // server that never answers is not an error (the harness's first call shows it).
  static absl::StatusOr<std::unique_ptr<OperatorSession>> Open(OperatorFlags flags,
                                                               const std::string& ns);
  // Destroys the client, then the operator (OperatorProcess's destructor stops it).
  ~OperatorSession() = default;
  OperatorSession(const OperatorSession&) = delete;
  OperatorSession& operator=(const OperatorSession&) = delete;

  sdk::TrainingClient& client() { return *client_; }
  // The operator's pid for /proc figures; 0 when not known (a --server without
  // --operator-pid).
  pid_t operator_pid() const { return operator_pid_; }
  // Stops the operator this session started (keeping its state dir with --keep-state);
  // nothing for one given by --server. The client stays usable for cancelling watches.
  void StopOperator();

 private:
  OperatorSession() = default;

  OperatorFlags flags_;
  // Declared before client_, so destroyed after it.
  std::unique_ptr<OperatorProcess> operator_;
  pid_t operator_pid_ = 0;
  std::unique_ptr<sdk::TrainingClient> client_;
};

}  // namespace coach::bench
