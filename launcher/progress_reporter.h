#pragma once

// ProgressReporter: coach-launch's reports of its workers' progress to the operator (the API's
// ReportProgress), on Kubernetes, where the operator reads no pod's logs. On when the pod has
//   COACH_PROGRESS_ADDRESS     host:port of the operator's API
//   COACH_PROGRESS_TOKEN_FILE  the pod's projected token of audience "coach"
//   COACH_POD_NAMESPACE, COACH_POD_NAME   the pod
//   COACH_PROGRESS_CA_PEM      the CA to trust (TLS); absent: plaintext
// (operator/reconcile/progress_report_env.h sets them). What is sent and when: ProgressTracker
// (progress_tracker.h: the newest progress at most every 2 s while it changes, a heartbeat at
// least every 30 s otherwise).
//
// Never in the training's way: OnMetric only updates the tracker; one thread of its own sends,
// each call bounded by `call_timeout`. The token file is read afresh for every report (the
// kubelet rotates it). A failed report is counted, and what it carried goes again after the
// tracker's min_interval (a heartbeat: after heartbeat_interval), so that no progress is lost to
// a failure (the operator takes a heartbeat for no progress); the first failure of each kind is
// logged once. UNAVAILABLE (another operator replica, one that does not lead, or a restart)
// is tried again at once on a new connection, up to `unavailable_retries` times, and makes the
// next report use a new connection. UNIMPLEMENTED (an operator that takes no reports)
// ends reporting.
//
// For a launcher that restarts its ranks in place (in_place_restarts.h), every report also
// carries the workers' launch state (SetLaunchState): a new state goes at once, not at the
// tracker's next due time; while the workers run the heartbeat comes every
// `launch_heartbeat_interval`, so that a launcher whose workers hang after a peer died learns of
// the job's restart soon; while it waits for the operator's word a report goes every
// `launch_wait_interval`. The operator's directive in each answer to such a report, dropped
// answers included, goes to the launch answer callback.
//
// Checkpoint on notice (checkpoint_relay.h): the operator's checkpoint request in any answer,
// dropped answers included, goes to the checkpoint request callback; the pod's answer
// (SetCheckpointReport) goes in every report from then on, and one report goes at once (again
// after `tracker.min_interval` when it fails, and at Finish when it never went).
// Every report carries the lowest step since the workers (re)started (first_step): where a
// resumed run began, which the operator counts the steps an interruption lost from.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1/training_service.pb.h"
#include "common/clock.h"
#include "common/metrics/metric_line.h"
#include "launcher/progress_tracker.h"

namespace coach::launcher {

// The transport of one report. Thread-compatible (the reporter's thread alone calls it).
class ProgressSender {
 public:
  virtual ~ProgressSender() = default;
  // The operator's answer (accepted or dropped, with a launch directive for a job that restarts
  // in place); a failed call's status (gRPC codes as absl's).
  virtual absl::StatusOr<api::v1::ReportProgressResponse> Send(
      const api::v1::ReportProgressRequest& request, const std::string& token,
      absl::Duration timeout) = 0;
  // The next Send opens a new connection.
  virtual void Reconnect() = 0;
};

// gRPC to `address`; TLS trusting `ca_pem` when it is not empty. The channel is made at the
// first Send. `clock` (not owned) sets the calls' deadlines.
std::unique_ptr<ProgressSender> NewGrpcProgressSender(std::string address, std::string ca_pem,
                                                      Clock* clock = Clock::Real());

struct ProgressReporterConfig {
  std::string namespace_;
  std::string pod;
  std::string token_file;
  ProgressTrackerOptions tracker;
  absl::Duration call_timeout = absl::Seconds(5);
  // How often the thread looks whether a report is due.
  absl::Duration poll = absl::Milliseconds(250);
  // Once a launch state is set: the heartbeat interval while the workers run (RUNNING), and
  // the interval of every report while the launcher waits (FAILED, STOPPED).
  absl::Duration launch_heartbeat_interval = absl::Seconds(2);
  absl::Duration launch_wait_interval = absl::Milliseconds(500);
  // A report answered UNAVAILABLE goes again at once on a new connection, this many times.
  int unavailable_retries = 4;
};

struct ProgressReporterStats {
  int64_t sent = 0;      // reports the operator answered
  int64_t accepted = 0;  // ... and kept
  int64_t failed = 0;    // reports that could not be made (token, network, refusal)
  bool stopped = false;  // the operator takes no reports
};

class ProgressReporter {
 public:
  using Log = std::function<void(const std::string& line)>;
  // An answer to a report that carried the launch state `sent`, with the operator's directive
  // when the answer has one.
  using LaunchAnswer = std::function<void(
      const api::v1::LaunchState& sent, const std::optional<api::v1::LaunchDirective>& directive)>;
  using CheckpointRequestCallback = std::function<void(const api::v1::CheckpointRequest& request)>;

  // From the environment: nullptr when COACH_PROGRESS_ADDRESS is unset. InvalidArgument naming
  // the variable when it is set but the others are missing.
  static absl::StatusOr<std::unique_ptr<ProgressReporter>> FromEnv(
      const std::map<std::string, std::string>& env, Log log);

  // `clock` is not owned.
  ProgressReporter(ProgressReporterConfig config, std::unique_ptr<ProgressSender> sender, Log log,
                   Clock* clock = Clock::Real());
  ~ProgressReporter();  // Finish(0) unless finished

  // A metric line of the workers. Never blocks on the network.
  void OnMetric(const metrics::MetricLine& metric);
  // Starts the sending thread.
  void Start();
  // Sends what changed since the last report (waiting at most `timeout`), then stops.
  void Finish(absl::Duration timeout);

  // From now on every report carries `state`, and one goes at once. A state of another attempt
  // than the last one starts the progress afresh (ProgressTracker::Restart). One thread calls it.
  void SetLaunchState(const api::v1::LaunchState& state);
  // Called on the reporter's thread for every answer to a report that carried a launch state;
  // must not block. Returns once no call of the previous callback is in progress, so that the
  // owner of a callback can unset it (nullptr) before it goes away.
  void SetLaunchAnswerCallback(LaunchAnswer callback);

  // From now on every report carries `report`, and one goes at once. Thread-safe.
  void SetCheckpointReport(const api::v1::CheckpointReport& report);
  // Called on the reporter's thread with the checkpoint request of every answer that has one;
  // must not block. Returns as SetLaunchAnswerCallback does.
  void SetCheckpointRequestCallback(CheckpointRequestCallback callback);

  ProgressReporterStats stats() const;

  // From now on a report goes at least every `interval` (heartbeats included), and one goes at
  // once: the launcher got SIGTERM and looks for a checkpoint request (notice_hold.h).
  // Thread-safe.
  void Hurry(absl::Duration interval);
  // An answer said the operator itself is deleting this pod (ReportProgressResponse.stopping).
  // Thread-safe.
  bool OperatorStopping() const;

 private:
  void Run();
  enum class Outcome { kAnswered, kDropped, kFailed, kStop };
  // One report now: the operator kept it, answered it without keeping it (too soon after the
  // last), it failed, or reporting should end.
  Outcome SendOne(const ProgressSnapshot& snapshot, absl::Duration timeout);
  void LogOnce(const std::string& kind, const std::string& line);
  bool WakeLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ProgressReporterConfig config_;
  const std::unique_ptr<ProgressSender> sender_;
  const Log log_;
  Clock* const clock_;
  ProgressTracker tracker_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  ProgressReporterStats stats_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> logged_ ABSL_GUARDED_BY(mu_);
  std::optional<api::v1::LaunchState> launch_ ABSL_GUARDED_BY(mu_);
  // A launch state not yet sent: the thread sends at once.
  bool launch_changed_ ABSL_GUARDED_BY(mu_) = false;
  // The pod's newest checkpoint answer; its version (counts SetCheckpointReport), the version a
  // report the operator answered carried, and when a failed one may go again (Monotonic).
  std::optional<api::v1::CheckpointReport> checkpoint_ ABSL_GUARDED_BY(mu_);
  uint64_t checkpoint_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t checkpoint_answered_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration checkpoint_retry_at_ ABSL_GUARDED_BY(mu_);
  bool checkpoint_changed_ ABSL_GUARDED_BY(mu_) = false;  // wakes the thread
  bool hurry_ ABSL_GUARDED_BY(mu_) = false;               // wakes the thread: a report at once
  bool operator_stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Held while a callback runs (see SetLaunchAnswerCallback).
  absl::Mutex answer_mu_;
  LaunchAnswer on_launch_answer_ ABSL_GUARDED_BY(answer_mu_);
  CheckpointRequestCallback on_checkpoint_request_ ABSL_GUARDED_BY(answer_mu_);
};

}  // namespace coach::launcher
