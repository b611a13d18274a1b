// How the MLflow tracker reaches the rest of the operator: a REST client per server, the
// run's annotations written to the stored job, the controller woken, the replicas' logs.

#pragma once

#include "operator/backend/backend.h"
#include "operator/core/controller.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/store/job_store.h"
#include "operator/tracking/mlflow_tracker.h"

namespace coach::cmd {

// Nothing is owned; all must outlive the tracker's workers. `*controller` is read at each
// call: the controller is made after the tracker (it observes it), null until then.
// `mlflow`: the operator's MLflow settings; clients for any other server than its own carry
// none of its credentials.
coach::tracking::MlflowTrackerHooks MakeTrackerHooks(coach::store::JobStore* job_store,
                                                     coach::core::WatchBroadcaster* watchers,
                                                     coach::core::Controller* const* controller,
                                                     coach::backend::Backend* backend,
                                                     const coach::model::MlflowConfig& mlflow);

}  // namespace coach::cmd
