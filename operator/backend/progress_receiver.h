#pragma once

// Where a replica pod's report of its own progress goes (the API's ReportProgress,
// operator/server/progress_intake.h): the kube backend, whose Observe hands the latest report
// of each pod to the reconciler as ObservedPod::progress. The local backend has none (its
// replicas' shim writes progress to a file it reads).

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace coach::backend {

// One report as the pod sent it; the receiver stamps the time with its own clock.
struct ProgressReport {
  int64_t step = 0;
  std::map<std::string, double> metrics;
  double steps_per_second = 0;
  // Nothing changed since the pod's last report.
  bool heartbeat = false;
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

  // True: recorded; false: dropped (the pod reported less than a second ago).
  // Errors: PermissionDenied (no replica pod of a job by that name and UID is known: another
  // instance, or a pod the operator does not run), ResourceExhausted (reports of too many pods
  // held), Unavailable (not reconciling here: caches not started, e.g. not the leader).
  // Thread-safe.
  virtual absl::StatusOr<bool> ReceiveProgress(const PodReport& report) = 0;
};

}  // namespace coach::backend
