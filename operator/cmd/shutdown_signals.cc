#include "operator/cmd/shutdown_signals.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace coach::cmd {

sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void AwaitShutdownSignal(const sigset_t& signals) {
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("coach-operator: signal {}, shutting down", signal_number);
}

}  // namespace coach::cmd
