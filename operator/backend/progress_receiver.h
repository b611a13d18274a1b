#pragma once

// Where a replica pod's report of its own progress goes (the API's ReportProgress,
// operator/server/progress_intake.h): the kube backend, whose Observe hands the latest report
// of each pod to the reconciler as ObservedPod::progress. The local backend has none (its
// replicas' shim writes progress to a file it reads). Beside it, CheckpointChannel: what the
// reconciler's side calls to ask a job's pods for a checkpoint through the same reports.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend {

// One report as the pod sent it; the receiver stamps the time with its own clock.
struct ProgressReport {
  int64_t step = 0;
  // The lowest step since the workers started, when the launcher says it.
  std::optional<int64_t> first_step;
  std::map<std::string, double> metrics;
  double steps_per_second = 0;
  // Nothing changed since the pod's last report.
  bool heartbeat = false;
  // What coach-launch's workers do, from a launcher that restarts them in place.
  std::optional<model::ObservedPod::Launch> launch;
};

// The receiver's answer to a report.
struct ProgressReceipt {
  ProgressReceipt() = default;
  // Spelt out so that a receipt built from its first fields alone ({accepted, launch}) stays
  // free of -Wmissing-field-initializers.
  ProgressReceipt(bool accepted, std::optional<model::LaunchDirective> launch,
                  std::string job_uid = "")
      : accepted(accepted), launch(std::move(launch)), job_uid(std::move(job_uid)) {}

  // False: dropped (the pod reported less than a second ago).
  bool accepted = false;
  // For a pod of a job that restarts in place (model::ReconcileResult::launch), dropped
  // reports included.
  std::optional<model::LaunchDirective> launch;
  // The uid of the pod's job, from a receiver that knows it: with it the pod's answer carries its
  // job's checkpoint request and the pod's answers to it are kept (CheckpointChannel); empty: the
  // pod gets no checkpoint requests.
  std::string job_uid;
  // The operator is deleting the pod itself: no checkpoint request is coming for it.
  bool stopping = false;
};

// A report and who made it, as the API verified: the pod its token is bound to.
struct PodReport {
  std::string namespace_;
  std::string pod;
  std::string pod_uid;
  ProgressReport report;
};

class ProgressReceiver {
 public:
  virtual ~ProgressReceiver() = default;

  // Recorded or dropped, the pod's launch directive if its job has one, and its job's uid
  // where the receiver knows it. Errors:
  // PermissionDenied (no replica pod of a job by that name and UID is known: another instance, or a
  // pod the operator does not run), ResourceExhausted (reports of too many pods held), Unavailable
  // (not reconciling here: caches not started, e.g. not the leader). Thread-safe.
  virtual absl::StatusOr<ProgressReceipt> ReceiveProgress(const PodReport& report) = 0;
};

// A pod's answer to a checkpoint request (api::v1::CheckpointReport).
struct CheckpointAnswer {
  bool saved = false;
  int64_t step = 0;
  std::string message;
};

// One checkpoint request of a job and the answers its pods gave so far.
struct CheckpointState {
  int64_t id = 0;
  absl::Time deadline;
  // By pod name (the pods of a job share its namespace).
  std::map<std::string, CheckpointAnswer> answers;
};

// Checkpoint on notice: the operator asks every launcher-managed pod of a job to have its
// training code save a checkpoint, at one step on every rank, before a deadline (a spot node's
// reclamation notice), and learns what each pod saved. The request reaches the pods in the
// answers to their progress reports (api/v1/training_service.proto: CheckpointRequest), so a
// pod learns of it with its next report; the answers come back in later reports.
class CheckpointChannel {
 public:
  virtual ~CheckpointChannel() = default;

  // From now on the answers to the reports of every pod of the job (by uid) carry a request to
  // save a checkpoint within `grace`; it replaces the job's earlier request and its answers.
  // Returns the request's id: above every id given for the job before, also by an earlier
  // operator process. Errors: InvalidArgument (empty uid, grace <= 0), ResourceExhausted
  // (requests of too many jobs held). Thread-safe.
  virtual absl::StatusOr<int64_t> RequestCheckpoint(const std::string& job_uid,
                                                    absl::Duration grace) = 0;

  // The job's request `id` and its pods' answers so far. NotFound when the job's newest request
  // is not `id` (none, forgotten, or a later one). Thread-safe.
  virtual absl::StatusOr<CheckpointState> GetCheckpointState(const std::string& job_uid,
                                                             int64_t id) const = 0;

  // The job's newest request and its answers. NotFound when it has none. Thread-safe.
  virtual absl::StatusOr<CheckpointState> NewestCheckpoint(const std::string& job_uid) const = 0;

  // No more requests go to the job's pods, and its answers are dropped (the job ended, or its
  // pods are gone). Idempotent. Thread-safe.
  virtual void ForgetCheckpoints(const std::string& job_uid) = 0;
};

}  // namespace coach::backend
