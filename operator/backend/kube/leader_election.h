#pragma once

// Leader election over a coordination.k8s.io/v1 Lease, in the shape of client-go's
// leaderelection package, so that of several coach-operator replicas exactly one reconciles.
//
// The Lease's spec: holderIdentity, leaseDurationSeconds, acquireTime, renewTime,
// leaseTransitions. A candidate:
//   - creates the Lease when it does not exist (holding it);
//   - takes it over (acquireTime = now, leaseTransitions + 1) when it is free (no holder) or
//     expired. Expiry is judged on this process's clock from when this candidate last saw
//     the record change (client-go's observedTime), never from the renewTime written by
//     another host, so clock skew between hosts does not matter;
//   - as leader, renews (renewTime = now) every retry period; every write is a conditional
//     PUT on the Lease's resourceVersion, so two candidates can never both win a round.
// The leader gives up (OnStoppedLeading) when no renewal has succeeded for renew_deadline,
// and goes back to being a candidate. Stop() while leading releases the Lease (holder
// cleared, duration 1s) so another candidate takes over at once, then calls
// OnStoppedLeading.
//
// Callbacks run on the elector's thread, one at a time, and must return promptly (start the
// controller on another thread). Time comes from the injected Clock; waits between rounds
// are real time (retry_period) and end at once on Stop().
//
// Thread-safe.

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::backend::kube {

struct LeaderElectionConfig {
  std::string lease_namespace = "default";
  std::string lease_name = "coach-operator";
  // Unique per candidate; DefaultIdentity() when empty.
  std::string identity;
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  // Release the Lease on Stop() while leading.
  bool release_on_stop = true;
  // Called on the election thread just after IsLeader() turns true (and, for the other, false).
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  // Every time the observed holder changes (including to this candidate); optional.
  std::function<void(const std::string& holder)> on_new_leader;
  // Not owned.
  ::coach::Clock* clock = ::coach::Clock::Real();
};

// "<hostname>_<16 random hex digits>".
std::string DefaultIdentity();

// Errors: InvalidArgument naming the field (lease_duration > renew_deadline > retry_period
// > 0 as upstream requires, names non-empty).
absl::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  // `client` is not owned and must outlive the elector. Errors: ValidateLeaderElectionConfig.
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Create(
      ::coach::kubeclient::KubeClient* client, LeaderElectionConfig config);
  ~LeaderElector();  // Stop()

  // Runs the election on a thread of its own. Call once.
  void Start();
  // Ends the election (releasing the Lease when leading and release_on_stop) and joins the
  // thread. Idempotent.
  void Stop();

  bool IsLeader() const { return leading_.load(); }
  const std::string& identity() const { return config_.identity; }
  // The holder last observed ("" when none).
  std::string observed_holder() const;

  // One round, on the calling thread: acquire or renew. True when this candidate holds the
  // Lease afterwards. Errors: what the API server said (the round then counts as failed).
  // Exposed for tests that drive the election with a fake clock; Start() calls it.
  absl::StatusOr<bool> TryAcquireOrRenew();

 private:
  LeaderElector(::coach::kubeclient::KubeClient* client, LeaderElectionConfig config);
  void Run();
  void SetLeading(bool leading);
  // Waits up to `d` of real time; false when stopped.
  bool Wait(absl::Duration d);
  absl::Status Release();
  nlohmann::json LeaseSpec(absl::Time now, absl::Time acquire_time, int64_t transitions) const;

  ::coach::kubeclient::KubeClient* const client_;
  LeaderElectionConfig config_;
  ::coach::Clock* const clock_;
  std::atomic<bool> leading_{false};

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // The last record seen (spec only) and when (our clock) it was first seen so.
  nlohmann::json observed_spec_ ABSL_GUARDED_BY(mu_);
  std::string observed_holder_ ABSL_GUARDED_BY(mu_);
  absl::Time observed_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread thread_;
};

}  // namespace coach::backend::kube
