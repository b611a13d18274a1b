// coach-operator: the sequence of start-up and shutdown. Flags (operator/cmd/flags.h, each
// also from the environment variable shown in --help) and their validation (settings.h), then
// the running parts (operator_process.h): the store and backend, the controller, the gRPC API and
// the HTTP endpoints; graceful shutdown on SIGTERM/SIGINT.

#include <signal.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "operator/cmd/exit_codes.h"
#include "operator/cmd/flags.h"
#include "operator/cmd/operator_process.h"
#include "operator/cmd/settings.h"
#include "operator/cmd/shutdown_signals.h"

namespace {

using coach::cmd::kExitFailure;
using coach::cmd::kExitUsage;

int Usage(absl::string_view message) {
  std::cerr << "coach-operator: " << message << "\n";
  return kExitUsage;
}

int Failed(const absl::Status& status) {
  spdlog::error("{}", std::string(status.message()));
  return kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  coach::cmd::Flags flags = coach::cmd::DefaultFlags();
  if (std::optional<int> exit_code = coach::cmd::ParseCommandLine(argc, argv, &flags)) {
    return *exit_code;
  }
  // Every flag is validated before anything is touched.
  coach::cmd::Settings settings;
  if (absl::Status valid = coach::cmd::Validate(&flags, &settings); !valid.ok()) {
    return Usage(valid.message());
  }
  // Before any thread starts: every thread inherits the mask.
  const sigset_t signals = coach::cmd::BlockShutdownSignals();

  coach::cmd::OperatorProcess op(flags, settings);
  if (absl::Status s = op.WireBackend(); !s.ok()) return Failed(s);
  op.BuildCore();
  if (absl::Status s = op.StartHttp(); !s.ok()) return Failed(s);
  if (absl::Status s = op.StartWebhooks(); !s.ok()) return Failed(s);
  if (absl::Status s = op.WatchJobs(); !s.ok()) return Failed(s);
  if (absl::Status s = op.StartController(); !s.ok()) return Failed(s);
  if (absl::Status s = op.ServeApi(); !s.ok()) {
    Failed(s);
    op.StopController();
    return kExitFailure;
  }
  op.BeginServing();

  coach::cmd::AwaitShutdownSignal(signals);
  op.ShutDown();
  return op.exit_code();
}
