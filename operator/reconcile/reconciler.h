#pragma once

// The pure reconciler: (job, observed objects, now, config) -> actions, new status,
// requeue time, events. No I/O, no clock: `now` is the only time it knows. A pass builds the
// job's plan (plan_job.h: every pod, shared object and rule of its kind), then converges the
// observed state toward it; what recovery decides (recovery.h) the pass applies.
//
// Contract:
//  - Idempotent: names are deterministic, so applying the actions and reconciling with
//    the resulting observed state creates nothing twice; reconciling twice with the same
//    inputs gives the same result.
//  - `result.status` is always the status the job should have; write it only when
//    `status_changed`. lastReconcileTime is set to `now` only when something else in the
//    status changed, so a steady job does not write its status on every pass.
//  - `requeue_at` is set whenever a rule will fire later without any pod event:
//    startTime + activeDeadlineSeconds while running (fixes upstream's missed
//    deadlines), completionTime + ttlSecondsAfterFinished once finished.
//  - A job whose runPolicy.managedBy names another controller gets no actions, no
//    events and an unchanged status.
//  - Kinds follow upstream v1.9.4 (kubeflow-v1.md "runPolicy and restarts", "Status").

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

model::ReconcileResult Reconcile(const model::Job& job, const model::ObservedState& observed,
                                 absl::Time now, const model::ReconcileConfig& config);

}  // namespace coach::reconcile
