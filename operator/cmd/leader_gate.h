// When the controller starts: at once, or, with --leader-elect, once this replica holds the
// lease. A replica that waits for the lease serves the API meanwhile. As upstream, one that
// loses the lease while leading ends (SIGTERM to itself, exit code kExitFailure), so that two
// controllers never overlap; so does a leader whose controller cannot start.

#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "operator/backend/backend.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/leader_election.h"
#include "operator/core/controller.h"

namespace coach::cmd {

// Call one Start... at most once. Destroying the gate ends its wait for the lease (StopWaiting),
// so that a start-up that fails after the campaign began exits instead of aborting on a joinable
// thread. Not copyable or movable: its thread holds `this`.
class LeaderGate {
 public:
  LeaderGate() = default;
  ~LeaderGate() { StopWaiting(); }
  LeaderGate(const LeaderGate&) = delete;
  LeaderGate& operator=(const LeaderGate&) = delete;

  // Starts `controller` now. The error's message is the line to log.
  absl::Status StartNow(core::Controller* controller, const backend::Backend& backend);

  // Campaigns for the lease of `config` through `client`, and starts `controller` on a thread
  // of the gate's once this replica leads. Everything must outlive the gate. The error's message
  // is the line to log.
  absl::Status StartWhenLeading(kubeclient::KubeClient* client,
                                backend::kube::LeaderElectionConfig config,
                                core::Controller* controller, const backend::Backend& backend);

  // True while this replica campaigns and another one leads (it is ready meanwhile).
  bool WaitingForLease() const { return elector_ != nullptr && !elector_->IsLeader(); }

  // Ends the wait for the lease, if any; a controller being started is waited for.
  void StopWaiting();
  // Gives the lease up, if held: only once the controller has stopped, never two at once.
  void StopCampaign();

  // 0, or kExitFailure when the lease was lost or the controller could not start on it.
  int exit_code() const { return exit_code_.load(); }

 private:
  // Sets kExitFailure and sends SIGTERM to the process, which main waits for to shut down.
  void Fail();

  std::unique_ptr<backend::kube::LeaderElector> elector_;
  absl::Mutex mu_;
  bool acquired_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int> exit_code_{0};
  std::thread thread_;
};

}  // namespace coach::cmd
