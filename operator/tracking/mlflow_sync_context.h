#pragma once

// What one MlflowTracker::Sync attempt carries from step to step: its steps live in
// mlflow_sync_steps.cc and mlflow_history.cc.

#include <string>

#include "integrations/mlflow/tracking_client.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/tracking/mlflow_tracker.h"

namespace coach::tracking {

struct MlflowTracker::SyncContext {
  std::string uid;
  std::string key;  // JobKey
  std::string* op;  // the call under way, for the worker's count and log of a failure
  // The job's entry as the attempt began; the steps update entry.progress, which Save stores.
  Tracked entry;
  reconcile::MlflowTarget target;
  mlflow::TrackingClient* client = nullptr;
  bool finished = false;  // Succeeded or Failed
  bool ending = false;    // finished or deleted: the run is to end
  // The run was there before this attempt: named by the job's annotation, or found by its tag.
  bool found_existing = false;
};

}  // namespace coach::tracking
