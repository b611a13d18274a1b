#pragma once

// A TrainJob's plan (model::JobPlan): its runtime merged in (operator/trainer), its replicated
// jobs as the job model's replica types, and every object upstream's JobSet and Job controllers
// would have made for it. Pure: a function of the TrainJob, the runtime the backend observed,
// and the attempt.
//
// The expanded job the reconciler reads: one replica spec per replicated job (replicas = its
// pod count, restartPolicy = its pods'), runPolicy.backoffLimit = the trainer Job's
// backoffLimit (Kubernetes' default 6), cleanPodPolicy Running (a finished JobSet deletes its
// active Jobs), and with JobSet failurePolicy.maxRestarts > 0 the whole-job restart rule
// (coach.dev/restart-scope: Job, coach.dev/max-restarts) that JobSet's restarts are.
//
// Deliberate differences from upstream (operator/trainer/README.md): pods and the Service are
// owned by the TrainJob (there are no JobSet and Job objects to own them) and carry
// coach.dev/attempt; Job-level backoffLimit is the trainer Job's for the whole TrainJob.

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/model/job_plan.h"
#include "operator/model/kube_object.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// The TrainJob's plan: its runtime merged in, one replica type per replicated job in the
// runtime's order, every pod upstream's controllers would make (decorated on demand with what
// coach adds to every replica), then its Service, MPI hostfile and SSH Secret, PVCs, PodGroup
// and (when the backend has no snapshot of the runtime for this job yet) the
// `<trainjob>-runtime-snapshot` ConfigMap, in that order; JobSet's success policy, dependsOn and
// words. `config` must outlive the plan (its pods are built from it).
//
// Errors: FailedPrecondition when the backend found no runtime (observed.train_job_runtime
// empty; observed.runtime_missing in the message) or the runtime's podGroupPolicy needs a
// gang scheduler `config` lacks; InvalidArgument naming the field when the TrainJob and its
// runtime cannot be merged or realised, or naming coach.dev/elastic-min-nodes when the runtime
// cannot have that range (operator/trainer/elastic_nodes.h).
absl::StatusOr<model::JobPlan> PlanTrainJob(const model::Job& job,
                                            const model::ObservedState& observed, int attempt,
                                            const model::ReconcileConfig& config);

// Upstream's TrainJob admission (operator/trainer/admission.h) against the runtime the backend
// observed: InvalidArgument with the webhook's aggregated field errors when it would have refused
// the job. The operator's webhook (operator/webhook) refuses such a TrainJob at `kubectl apply`;
// this runs at `coach submit` and on each pass, for a TrainJob stored while no webhook was
// registered, which then fails naming the field.
absl::Status AdmitTrainJob(const model::Job& job, const model::ObservedState& observed);

// Upstream's TrainJob defaulter on a job being created: every runtimePatches entry without a
// time gets `now`. A spec that is not JSON is left for the validation to refuse.
absl::Status DefaultTrainJob(model::Job* job, absl::Time now);

}  // namespace coach::reconcile
