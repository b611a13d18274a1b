#include "operator/cmd/mlflow_client.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"

namespace coach::cmd {

absl::StatusOr<coach::mlflow::RestTrackingOptions> MlflowOptionsFor(const std::string& uri,
                                                                    bool credentials) {
  absl::StatusOr<coach::mlflow::RestTrackingOptions> options =
      coach::mlflow::RestTrackingOptions::FromEnv([&](const char* name) -> const char* {
        if (std::string(name) == "MLFLOW_TRACKING_URI") return uri.c_str();
        if (!credentials) {
          for (const char* secret : kMlflowSecretVars) {
            if (std::string(name) == secret) return nullptr;
          }
        }
        return std::getenv(name);
      });
  if (!options.ok()) return options.status();
  options->retry.max_attempts = 2;
  options->retry.initial_backoff = absl::Milliseconds(200);
  options->retry.max_backoff = absl::Seconds(2);
  options->retry.max_jitter = absl::Milliseconds(200);
  options->request_timeout = absl::Seconds(10);
  options->connect_timeout = absl::Seconds(3);
  return options;
}

absl::StatusOr<std::unique_ptr<coach::mlflow::TrackingClient>> MakeMlflowClient(
    const std::string& uri, bool credentials) {
  absl::StatusOr<coach::mlflow::RestTrackingOptions> options = MlflowOptionsFor(uri, credentials);
  if (!options.ok()) return options.status();
  absl::StatusOr<std::unique_ptr<coach::mlflow::RestTrackingClient>> client =
      coach::mlflow::RestTrackingClient::Create(*std::move(options));
  if (!client.ok()) return client.status();
  return std::unique_ptr<coach::mlflow::TrackingClient>(std::move(client).value());
}

}  // namespace coach::cmd
