#include "integrations/mlflow/rest_options.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace coach::mlflow {

absl::StatusOr<RestTrackingOptions> RestTrackingOptions::FromEnv(
    const std::function<const char*(const char*)>& getenv_fn) {
  auto get = [&](const char* name) -> std::string {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  };
  RestTrackingOptions o;
  o.tracking_uri = get("MLFLOW_TRACKING_URI");
  if (o.tracking_uri.empty()) return absl::NotFoundError("MLFLOW_TRACKING_URI is not set");
  o.username = get("MLFLOW_TRACKING_USERNAME");
  o.password = get("MLFLOW_TRACKING_PASSWORD");
  o.token = get("MLFLOW_TRACKING_TOKEN");
  std::string insecure = absl::AsciiStrToLower(get("MLFLOW_TRACKING_INSECURE_TLS"));
  if (insecure == "true" || insecure == "1") {
    o.insecure_tls = true;
  } else if (!insecure.empty() && insecure != "false" && insecure != "0") {
    return absl::InvalidArgumentError("MLFLOW_TRACKING_INSECURE_TLS must be true or false");
  }
  o.server_cert_path = get("MLFLOW_TRACKING_SERVER_CERT_PATH");
  o.client_cert_path = get("MLFLOW_TRACKING_CLIENT_CERT_PATH");
  if (o.insecure_tls && !o.server_cert_path.empty()) {
    return absl::InvalidArgumentError(
        "MLFLOW_TRACKING_INSECURE_TLS and MLFLOW_TRACKING_SERVER_CERT_PATH are mutually exclusive");
  }
  if (std::string t = get("MLFLOW_HTTP_REQUEST_TIMEOUT"); !t.empty()) {
    double seconds = 0;
    if (!absl::SimpleAtod(t, &seconds) || seconds <= 0) {
      return absl::InvalidArgumentError(
          "MLFLOW_HTTP_REQUEST_TIMEOUT must be a positive number of seconds");
    }
    o.request_timeout = absl::Seconds(seconds);
  }
  if (std::string r = get("MLFLOW_HTTP_REQUEST_MAX_RETRIES"); !r.empty()) {
    int retries = 0;
    if (!absl::SimpleAtoi(r, &retries) || retries < 0) {
      return absl::InvalidArgumentError(
          "MLFLOW_HTTP_REQUEST_MAX_RETRIES must be a non-negative integer");
    }
    o.retry.max_attempts = retries + 1;
  }
  return o;
}

}  // namespace coach::mlflow
