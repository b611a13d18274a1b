// The MLflow REST client the operator makes: auth and TLS from the MLFLOW_TRACKING_*
// environment, retries and timeouts suited to a tracker that retries by itself.

#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "integrations/mlflow/rest_tracking_client.h"

namespace coach::cmd {

// The MLFLOW_TRACKING_* variables that identify the operator to a server.
inline constexpr const char* kMlflowSecretVars[] = {
    "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_CLIENT_CERT_PATH"};

// Client options for `uri`, TLS and (with `credentials`) auth from the MLFLOW_TRACKING_*
// environment. The tracker retries by itself, so the client's own retries are few and its
// timeouts short.
absl::StatusOr<coach::mlflow::RestTrackingOptions> MlflowOptionsFor(const std::string& uri,
                                                                    bool credentials = true);

// A client for `uri` with MlflowOptionsFor's options (the tracker's make_client hook).
// `credentials`: false for a server a job named (only the operator's own server gets them).
absl::StatusOr<std::unique_ptr<coach::mlflow::TrackingClient>> MakeMlflowClient(
    const std::string& uri, bool credentials);

}  // namespace coach::cmd
