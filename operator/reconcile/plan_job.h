#pragma once

// The plan of one reconcile pass (model::JobPlan): what the job needs, built before the pass
// from the job, what the backend observed and the operator's settings. Each kind fills it its
// own way: the kubeflow.org/v1 kinds from their builders (desired_objects.h: the pod with its
// framework's environment, the per-pod Service; mpi_objects.h; gang.h), a TrainJob from its
// runtime merge (train_job_plan.h). The pass (reconciler.h) reads only the plan.
//
// Pure: no I/O, no clock. `job` and `config` must outlive the plan.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/model/job_plan.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// The job's plan. A TrainJob whose runtime cannot be found yet gets a plan with `wait`; one
// that can never run as written (its runtime refuses it, the merge fails) a plan with
// `refused`; a finished TrainJob needs no runtime (nothing is created for it any more).
// Errors: InvalidArgument when the job's kind is unset or unknown.
absl::StatusOr<model::JobPlan> PlanJob(const model::Job& job, const model::ObservedState& observed,
                                       const model::ReconcileConfig& config);

// Every object of the plan, as a fresh job needs them: the shared objects in creation order,
// then per replica type in the kind's order, per index, the pod and (where each pod has one) its
// Service. Errors: the pods' and Services' (InvalidArgument or NotFound naming what the job
// lacks); FailedPrecondition naming what a waiting plan waits for; InvalidArgument with the words
// of a refused plan.
absl::StatusOr<std::vector<model::KubeObject>> PlannedObjects(const model::JobPlan& plan);

// PlannedObjects of the job's plan with nothing observed: what `coach render` prints for a v1
// job (a TrainJob needs its runtime observed).
absl::StatusOr<std::vector<model::KubeObject>> DesiredObjects(const model::Job& job,
                                                              const model::ReconcileConfig& config);

// The controller a job's runPolicy.managedBy must name (when set) for coach to act on it.
std::string ManagingController(const model::Job& job, const model::ReconcileConfig& config);

}  // namespace coach::reconcile
