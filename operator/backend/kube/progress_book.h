#pragma once

// ProgressBook: the latest progress report of each replica pod (ReportProgress,
// operator/server/progress_intake.h), in memory, for KubeBackend::Observe to hand the reconciler
// as ObservedPod::progress. What one job's pods send cannot cost the operator or other jobs much:
//
//   per pod     at most one report per `min_interval` (1 s) is accepted; the rest are dropped
//               (kTooSoon), before anything is stored or anyone is told
//   bounded     entries only for pods the backend holds in its cache (it calls Record only for
//               those, and Forget/Retain when they go), and never more than `max_pods`
//               (kFull: a new pod is refused, pods already in the book keep reporting)
//   per job     Record asks the job to be reconciled (notify_job) only when a report changed
//               its progress, at most once per `notify_interval` (5 s) per job; the reconciler
//               writes status every 10 s and requeues stall deadlines itself
//   launch      a report whose launch state (coach-launch restarting in place) differs from the
//               pod's last one is kept after `launch_min_interval` (100 ms) and asks for a pass
//               at once: a restart in place waits on these
//   time        the operator's own clock stamps a report (a pod's clock is not trusted)
//
// Progress is what advanced: a report whose step or metrics differ from the pod's last ones
// stamps `time`; a heartbeat, or a report that repeats the last one, only says the pod is alive
// (last_seen) and leaves `time` alone, so that a hung training that still heartbeats stalls.
// A pod's first report that is a heartbeat records no progress.
//
// Keys: "namespace/pod" and the pod's UID; a report of another UID (the pod of that name was
// recreated) starts the entry afresh, and Get answers only for the UID asked about.
// Thread-safe; Record and Get take a mutex of their own (the caller may hold its own lock).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/backend/progress_receiver.h"
#include "operator/model/observed_state.h"

namespace coach::backend::kube {

struct ProgressBookOptions {
  absl::Duration min_interval = absl::Seconds(1);
  absl::Duration notify_interval = absl::Seconds(5);
  absl::Duration launch_min_interval = absl::Milliseconds(100);
  size_t max_pods = 100000;
};

using ::coach::backend::ProgressReport;

class ProgressBook {
 public:
  enum class Outcome { kAccepted, kTooSoon, kFull };
  struct Recorded {
    Outcome outcome = Outcome::kAccepted;
    // The job's progress changed and it was not asked to reconcile within notify_interval.
    bool notify_job = false;
    // MarkStopping was said of this instance: no checkpoint request is coming for it.
    bool stopping = false;
  };

  explicit ProgressBook(ProgressBookOptions options = {}) : options_(options) {}

  // `pod_key` "ns/name", `job_key` "ns/job" (the pod's job-name label), `now` the operator's
  // time.
  Recorded Record(const std::string& pod_key, const std::string& uid, const std::string& job_key,
                  const ProgressReport& report, absl::Time now);

  // The pod's progress, if the instance `uid` reported any.
  std::optional<model::ObservedPod::Progress> Get(const std::string& pod_key,
                                                  const std::string& uid) const;
  // The launch state the instance `uid` last reported, if any.
  std::optional<model::ObservedPod::Launch> Launch(const std::string& pod_key,
                                                   const std::string& uid) const;
  // When the instance `uid` last made an accepted report, heartbeats included.
  std::optional<absl::Time> LastSeen(const std::string& pod_key, const std::string& uid) const;

  // The operator deletes the instance `uid` itself (it has reported before; one that never
  // did is not kept): its later reports are Recorded as stopping.
  void MarkStopping(const std::string& pod_key, const std::string& uid);

  void Forget(const std::string& pod_key);
  // Forgets every pod for which `keep(pod_key, uid)` is false.
  void Retain(const std::function<bool(const std::string& pod_key, const std::string& uid)>& keep);

  size_t size() const;
  // Jobs with at least one pod in the book.
  size_t jobs() const;

 private:
  struct Entry {
    std::string uid;
    std::string job_key;
    absl::Time last_accepted = absl::InfinitePast();
    std::optional<model::ObservedPod::Progress> progress;
    std::optional<model::ObservedPod::Launch> launch;
    bool stopping = false;
  };
  struct JobEntry {
    size_t pods = 0;
    absl::Time last_notified = absl::InfinitePast();
  };

  void EraseLocked(std::unordered_map<std::string, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ProgressBookOptions options_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, Entry> pods_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, JobEntry> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::backend::kube
