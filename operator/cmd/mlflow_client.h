// The MLflow REST client the operator makes: auth and TLS from the MLFLOW_TRACKING_*
// environment, retries and timeouts suited to a tracker that retries by itself.

#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "integrations/mlflow/rest_tracking_client.h"

namespace coach::cmd {

// Client options for `uri`, auth and TLS from the MLFLOW_TRACKING_* environment. The tracker
// retries by itself, so the client's own retries are few and its timeouts short.
absl::StatusOr<coach::mlflow::RestTrackingOptions> MlflowOptionsFor(const std::string& uri);

// A client for `uri` with MlflowOptionsFor's options (the tracker's make_client hook).
absl::StatusOr<std::unique_ptr<coach::mlflow::TrackingClient>> MakeMlflowClient(
    const std::string& uri);

}  // namespace coach::cmd
