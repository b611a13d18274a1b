#pragma once

// Where a replica pod's report of its own progress goes (the API's ReportProgress,
// operator/server/progress_intake.h): the kube backend, whose Observe hands the latest report
// of each pod to the reconciler as ObservedPod::progress. The local backend has none (its
// replicas' shim writes progress to a file it reads).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend {

// One report as the pod sent it; the receiver stamps the time with its own clock.
struct ProgressReport {
  int64_t step = 0;
  std::map<std::string, double> metrics;
  double steps_per_second = 0;
  // Nothing changed since the pod's last report.
  bool heartbeat = false;
  // What coach-launch's workers do, from a launcher that restarts them in place.
  std::optional<model::ObservedPod::Launch> launch;
};

// The receiver's answer to a report.
struct ProgressReceipt {
  // False: dropped (the pod reported less than a second ago).
  bool accepted = false;
  // For a pod of a job that restarts in place (model::ReconcileResult::launch), dropped
  // reports included.
  std::optional<model::LaunchDirective> launch;
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

  // Recorded or dropped, and the pod's launch directive if its job has one. Errors:
  // PermissionDenied (no replica pod of a job by that name and UID is known: another instance, or a
  // pod the operator does not run), ResourceExhausted (reports of too many pods held), Unavailable
  // (not reconciling here: caches not started, e.g. not the leader). Thread-safe.
  virtual absl::StatusOr<ProgressReceipt> ReceiveProgress(const PodReport& report) = 0;
};

}  // namespace coach::backend
