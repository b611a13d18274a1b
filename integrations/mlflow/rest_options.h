#pragma once

// How a RestTrackingClient reaches its server: the tracking URI, auth, TLS, timeouts and the
// retry policy, from code or from MLflow's standard environment variables.

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::mlflow {

struct RetryPolicy {
  int max_attempts = 7;  // 1: no retry
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(60);
  double multiplier = 2.0;
  absl::Duration max_jitter = absl::Seconds(1);  // added uniformly in [0, max_jitter)
};

struct RestTrackingOptions {
  std::string tracking_uri;  // http(s)://host[:port][/prefix]
  std::string username;      // Basic auth when set (wins over the token)
  std::string password;
  std::string token;             // Bearer
  bool insecure_tls = false;     // skip server certificate verification
  std::string server_cert_path;  // CA bundle to verify the server with
  std::string client_cert_path;  // PEM with the client certificate and its key (mTLS)
  absl::Duration request_timeout = absl::Seconds(120);
  absl::Duration connect_timeout = absl::Seconds(10);
  RetryPolicy retry;
  // An answer longer than this is refused (ResourceExhausted): a run's artifacts are written by
  // its training code too, and the operator must not buffer whatever it put there.
  size_t max_answer_bytes = 64 << 20;
  // Run start times and HTTP-date Retry-After values are read on this clock.
  Clock* clock = Clock::Real();

  // From MLFLOW_TRACKING_URI, MLFLOW_TRACKING_USERNAME/PASSWORD, MLFLOW_TRACKING_TOKEN,
  // MLFLOW_TRACKING_INSECURE_TLS (true/1), MLFLOW_TRACKING_SERVER_CERT_PATH,
  // MLFLOW_TRACKING_CLIENT_CERT_PATH, MLFLOW_HTTP_REQUEST_TIMEOUT (seconds),
  // MLFLOW_HTTP_REQUEST_MAX_RETRIES. `getenv` is injectable for tests. InvalidArgument for a
  // malformed value (naming the variable, never echoing a secret); NotFound when
  // MLFLOW_TRACKING_URI is unset.
  static absl::StatusOr<RestTrackingOptions> FromEnv(
      const std::function<const char*(const char*)>& getenv_fn = nullptr);
};

}  // namespace coach::mlflow
