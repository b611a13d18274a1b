#include "operator/cmd/leader_gate.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/cmd/exit_codes.h"

namespace coach::cmd {
namespace {

absl::Status StartController(core::Controller* controller, const backend::Backend& backend) {
  absl::Status started = controller->Start();
  if (started.ok()) return started;
  return absl::Status(started.code(),
                      absl::StrCat("backend ", backend.Name(), ": ", started.ToString()));
}

}  // namespace

absl::Status LeaderGate::StartNow(core::Controller* controller, const backend::Backend& backend) {
  return StartController(controller, backend);
}

absl::Status LeaderGate::StartWhenLeading(kubeclient::KubeClient* client,
                                          backend::kube::LeaderElectionConfig config,
                                          core::Controller* controller,
                                          const backend::Backend& backend) {
  config.on_started_leading = [this] {
    absl::MutexLock lock(&mu_);
    acquired_ = true;
  };
  config.on_stopped_leading = [this] {
    bool lost;
    {
      absl::MutexLock lock(&mu_);
      lost = acquired_ && !shutdown_;  // not the release at shutdown
    }
    if (lost) {
      spdlog::error("leader election: lost the lease while reconciling; exiting");
      Fail();
    }
  };
  auto made = backend::kube::LeaderElector::Create(client, config);
  if (!made.ok()) {
    return absl::Status(made.status().code(),
                        absl::StrCat("leader election: ", made.status().ToString()));
  }
  elector_ = *std::move(made);
  thread_ = std::thread([this, controller, backend = &backend] {
    {
      absl::MutexLock lock(&mu_);
      auto decided = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return acquired_ || shutdown_; };
      mu_.Await(absl::Condition(&decided));
      if (shutdown_) return;
    }
    if (absl::Status started = StartController(controller, *backend); !started.ok()) {
      spdlog::error("{}", std::string(started.message()));
      Fail();
    }
  });
  elector_->Start();
  spdlog::info("leader election: {} waits for lease {}/{}", elector_->identity(),
               config.lease_namespace, config.lease_name);
  return absl::OkStatus();
}

void LeaderGate::StopWaiting() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }
  thread_.join();
}

void LeaderGate::StopCampaign() {
  if (elector_ != nullptr) elector_->Stop();
}

void LeaderGate::Fail() {
  exit_code_ = kExitFailure;
  kill(getpid(), SIGTERM);
}

}  // namespace coach::cmd
