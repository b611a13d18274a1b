#pragma once

// What one job needs, built once per reconcile pass before the pass runs
// (operator/reconcile/plan_job.h). The pass converges the observed state toward it and never
// asks which kind of job it has: every difference between kinds is a value here.
//
// Invariants: `job` is never null; every replica type of `job` has its pods from `pod` for
// indices 0..replicas-1; `service` is set exactly when `service_per_pod`.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/kinds.h"
#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"

namespace coach::model {

// Whose words the job's conditions and events use.
enum class StatusWords {
  // kubeflow.org/v1: reasons prefixed with the kind ("PyTorchJobFailed").
  kTrainingOperator,
  // Trainer v2: JobSet's unprefixed reasons and messages, and status.jobsStatus.
  kJobSet,
};

// A replica type that starts only once another reached a state (Trainer v2 dependsOn).
struct PlannedDependency {
  std::string replica_type;
  std::string state;  // "Complete": every pod succeeded; "Ready": every pod runs or succeeded
};

struct JobPlan {
  // The job the pass converges: the stored job, or a TrainJob expanded into one replica type
  // per replicated job (replicas, restart policy and run policy as its runtime says).
  const Job* job = nullptr;
  // Owns `job` when the plan expanded it.
  std::shared_ptr<const Job> expanded;
  // The kind's rules as data (success rule, restart rules, names, API version).
  const api::v1::KindInfo* kind = nullptr;

  // Non-empty: the job cannot run as written, in words naming the field; the pass fails it.
  std::string refused;
  // Set: the plan cannot be built yet (a TrainJob's runtime is missing); the pass records
  // this warning and looks again after `retry`, changing nothing.
  struct Wait {
    std::string reason;
    std::string message;  // the event's
    std::string cause;    // what is missing, naming the field
    absl::Duration retry = absl::Seconds(10);
  };
  std::optional<Wait> wait;

  StatusWords words = StatusWords::kTrainingOperator;
  // runPolicy.cleanPodPolicy in effect: "None", "Running" or "All".
  std::string clean_pod_policy;

  // Each pod (replica type, index) has a headless Service of the same name.
  bool service_per_pod = false;
  // Replica type -> what it waits for before its pods are created.
  std::map<std::string, std::vector<PlannedDependency>> depends_on;
  // Empty: the kind's success rule over the replica counts (kind->success). Otherwise the job
  // succeeded once every one of these replica types completed, or with `success_any` one.
  std::vector<std::string> success_types;
  bool success_any = false;
  // The replica type a failure message names when the failure names none (JobSet's "first
  // failed job").
  std::string leading_type;
  // status.replicaStatuses[].replicas is written (Trainer v2 readers look for it).
  bool status_counts_replicas = false;
  // status.jobsStatus is written, one entry per replica type.
  bool reports_jobs_status = false;
  // The replica types in their kind's order (v1: the kind table's; a TrainJob: its runtime's):
  // how the job's objects are listed and its jobsStatus reported.
  std::vector<std::string> replica_types;

  // Shared objects in creation order (MPI ConfigMap and RBAC, PodGroup, a TrainJob's Service,
  // hostfile, SSH Secret, PVCs, runtime snapshot): each is created when it does not exist.
  std::vector<KubeObject> objects;
  // The complete pod of (replica type, index), built on demand: most passes create no pod.
  // Errors: InvalidArgument or NotFound naming what the job lacks.
  std::function<absl::StatusOr<KubeObject>(const std::string& type, int index)> pod;
  // The headless Service of (replica type, index); only with service_per_pod.
  std::function<absl::StatusOr<KubeObject>(const std::string& type, int index)> service;
};

}  // namespace coach::model
