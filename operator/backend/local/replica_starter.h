#pragma once

// Starting is asynchronous, as on a kubelet: LocalBackend::Apply(kCreate Pod) returns once the
// pod's Pending record is durable, and this small pool of starter threads runs the replica
// shims, so the replicas of one job start in parallel instead of one shim start after another.
// When a start ends the backend has made the record Running (or dropped it when the process
// could not be started), and the `ended` hook fires the change callback. A start that failed is
// reported by the next Apply(kCreate) of that pod (TakeError), so the controller retries it with
// its backoff rather than at once. DeletePod and Forget wait for the job's starts in flight
// (WaitForJob); Stop and the destructor wait for all of them.
//
// Thread-safe.

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

class ReplicaStarter {
 public:
  // One start; its error means the replica did not start (and its record is gone).
  using StartFn = std::function<absl::Status()>;
  // Called on the starter thread after each start, its error already recorded for TakeError
  // and before the start counts as ended: a pass it wakes sees the start's outcome, and
  // WaitForJob / WaitForAll return only after the hook did.
  using EndedFn = std::function<void(const store::JobKey&)>;

  // Starts `threads` (>= 1) starter threads. `ended` may be empty.
  ReplicaStarter(int threads, EndedFn ended);
  // Runs every start still queued (each Pending record written gets its start), then joins
  // the threads.
  ~ReplicaStarter();
  ReplicaStarter(const ReplicaStarter&) = delete;
  ReplicaStarter& operator=(const ReplicaStarter&) = delete;

  // Counts a start of `pod` of `job` in flight from now on and queues `start` on the pool.
  void Queue(const store::JobKey& job, const std::string& pod, StartFn start);
  // The error of the pod's last failed start, reported once (OK when there is none).
  absl::Status TakeError(const store::JobKey& job, const std::string& pod);
  // Drops the job's errors not yet taken.
  void ForgetErrors(const store::JobKey& job);
  // Blocks until no start of `job` is in flight.
  void WaitForJob(const store::JobKey& job);
  // Blocks until no start is in flight.
  void WaitForAll();

 private:
  void Loop();

  const EndedFn ended_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<store::JobKey, int> in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<store::JobKey, std::string>, absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace coach::backend::local
