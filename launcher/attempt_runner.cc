#include "launcher/attempt_runner.h"

#include <signal.h>

#include <string>
#include <utility>

namespace coach::launcher {
namespace {

class ProcessAttemptRunner : public AttemptRunner {
 public:
  ProcessAttemptRunner(std::vector<WorkerSpec> workers, SupervisorOptions options,
                       std::function<void()> attempt_ended)
      : workers_(std::move(workers)),
        options_(std::move(options)),
        attempt_ended_(std::move(attempt_ended)) {}

  absl::StatusOr<SupervisionResult> Run(int attempt, const StopRequest& stop) override {
    std::vector<WorkerSpec> workers;
    workers.reserve(workers_.size());
    for (const WorkerSpec& w : workers_) workers.push_back(ForAttempt(w, attempt));
    SupervisorOptions options = options_;
    options.stop = &stop;
    absl::StatusOr<SupervisionResult> result = Supervise(workers, options);
    if (attempt_ended_) attempt_ended_();
    return result;
  }

  int WaitForSignal(absl::Duration timeout) override {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    const timespec ts = absl::ToTimespec(timeout);
    const int sig = sigtimedwait(&set, nullptr, &ts);
    return sig > 0 ? sig : 0;
  }

 private:
  const std::vector<WorkerSpec> workers_;
  const SupervisorOptions options_;
  const std::function<void()> attempt_ended_;
};

}  // namespace

WorkerSpec ForAttempt(WorkerSpec spec, int attempt) {
  spec.env["COACH_ATTEMPT"] = std::to_string(attempt);
  spec.env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(attempt);
  return spec;
}

std::unique_ptr<AttemptRunner> NewProcessAttemptRunner(std::vector<WorkerSpec> workers,
                                                       SupervisorOptions options,
                                                       std::function<void()> attempt_ended) {
  return std::make_unique<ProcessAttemptRunner>(std::move(workers), std::move(options),
                                                std::move(attempt_ended));
}

}  // namespace coach::launcher
