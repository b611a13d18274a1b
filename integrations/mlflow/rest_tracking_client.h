#pragma once

// TrackingClient over MLflow's REST API (libcurl). One CURL handle per thread, reused across calls
// and clients, so connections stay open (keep-alive).
//
// Auth and TLS follow the standard variables (RestTrackingOptions::FromEnv). Secrets (password,
// token, userinfo in the URI) never appear in logs or in returned statuses: messages name the method,
// the API path, the HTTP status and MLflow's error_code/message only.
//
// Retries: 408, 429, 500, 502, 503, 504 and connection/timeout errors are retried with exponential
// backoff and full jitter (RetryPolicy), honouring Retry-After (seconds or HTTP date, capped at
// max_backoff). POSTs are retried too, as the Python client does: a metric may land twice when a
// response is lost after the server stored it. Other errors return at once (write-once param
// conflicts included).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "integrations/mlflow/tracking_client.h"

namespace coach::mlflow {

struct RetryPolicy {
  int max_attempts = 7;                           // 1: no retry
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(60);
  double multiplier = 2.0;
  absl::Duration max_jitter = absl::Seconds(1);   // added uniformly in [0, max_jitter)
};

struct RestTrackingOptions {
  std::string tracking_uri;        // http(s)://host[:port][/prefix]
  std::string username;            // Basic auth when set (wins over the token)
  std::string password;
  std::string token;               // Bearer
  bool insecure_tls = false;       // skip server certificate verification
  std::string server_cert_path;    // CA bundle to verify the server with
  std::string client_cert_path;    // PEM with the client certificate and its key (mTLS)
  absl::Duration request_timeout = absl::Seconds(120);
  absl::Duration connect_timeout = absl::Seconds(10);
  RetryPolicy retry;

  // From MLFLOW_TRACKING_URI, MLFLOW_TRACKING_USERNAME/PASSWORD, MLFLOW_TRACKING_TOKEN,
  // MLFLOW_TRACKING_INSECURE_TLS (true/1), MLFLOW_TRACKING_SERVER_CERT_PATH,
  // MLFLOW_TRACKING_CLIENT_CERT_PATH, MLFLOW_HTTP_REQUEST_TIMEOUT (seconds),
  // MLFLOW_HTTP_REQUEST_MAX_RETRIES. `getenv` is injectable for tests. InvalidArgument for a malformed
  // value (naming the variable, never echoing a secret); NotFound when MLFLOW_TRACKING_URI is unset.
  static absl::StatusOr<RestTrackingOptions> FromEnv(
      const std::function<const char*(const char*)>& getenv_fn = nullptr);
};

class RestTrackingClient final : public TrackingClient {
 public:
  // InvalidArgument when the URI is not http(s) or a certificate file is unreadable.
  static absl::StatusOr<std::unique_ptr<RestTrackingClient>> Create(RestTrackingOptions options);
  // Create(FromEnv()).
  static absl::StatusOr<std::unique_ptr<RestTrackingClient>> FromEnv();

  absl::StatusOr<std::string> GetOrCreateExperiment(absl::string_view name) override;
  absl::StatusOr<Experiment> GetExperimentByName(absl::string_view name) override;
  absl::StatusOr<RunInfo> CreateRun(const CreateRunRequest& request) override;
  absl::StatusOr<Run> GetRun(absl::string_view run_id) override;
  absl::StatusOr<RunInfo> UpdateRun(const UpdateRunRequest& request) override;
  absl::StatusOr<std::vector<RunInfo>> SearchRuns(const SearchRunsRequest& request) override;
  absl::Status LogBatch(absl::string_view run_id, const std::vector<Metric>& metrics,
                        const std::vector<Param>& params, const std::vector<Tag>& tags) override;
  absl::StatusOr<std::vector<Metric>> GetMetricHistory(absl::string_view run_id,
                                                       absl::string_view key) override;
  absl::Status UploadArtifact(absl::string_view run_id, absl::string_view path,
                              absl::string_view content) override;
  absl::StatusOr<std::string> DownloadArtifact(absl::string_view run_id,
                                               absl::string_view path) override;

  // The tracking URI without userinfo, for logs and UIs ("<uri>/#/experiments/<id>/runs/<run>").
  const std::string& redacted_uri() const { return redacted_uri_; }

  // Observability: HTTP requests sent (attempts, retries included) and retries taken.
  int64_t requests_sent() const { return requests_.load(std::memory_order_relaxed); }
  int64_t retries() const { return retries_.load(std::memory_order_relaxed); }

  struct HttpResponse;  // rest_tracking_client.cc

 private:
  explicit RestTrackingClient(RestTrackingOptions options);

  // One request with retries; the body is JSON (POST) or raw (PUT). The returned status is already
  // mapped to an absl code. `path` is relative to the base URI ("/api/2.0/mlflow/...").
  absl::StatusOr<std::string> Call(const char* method, const std::string& path,
                                   const std::string& body, const char* content_type);
  absl::StatusOr<std::string> Post(const std::string& api, const std::string& json);
  absl::StatusOr<std::string> Get(const std::string& api, const std::string& query);
  absl::StatusOr<std::string> ArtifactPathFor(absl::string_view run_id, absl::string_view path);

  RestTrackingOptions options_;
  std::string base_;           // the URI without trailing '/'
  std::string redacted_uri_;
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> retries_{0};
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> artifact_root_ ABSL_GUARDED_BY(mu_);
};

namespace internal {
// Pure pieces of the REST edge, exposed for unit tests.

// The absl status for an HTTP response (2xx: OK). `body` may be MLflow's JSON error or plain text.
absl::Status MapHttpError(long http_status, absl::string_view body, absl::string_view what);
bool IsRetryableHttpStatus(long http_status);
// Retry-After as seconds or an IMF-fixdate; nullopt when absent or unparsable.
std::optional<absl::Duration> ParseRetryAfter(absl::string_view value, absl::Time now);
// The wait before retry number `retry` (1-based): min(max_backoff, initial * multiplier^(retry-1))
// plus jitter in [0, max_jitter) drawn from `unit_random` in [0,1); at least `retry_after` when set
// (itself capped at max_backoff).
absl::Duration BackoffDelay(const RetryPolicy& policy, int retry,
                            std::optional<absl::Duration> retry_after, double unit_random);
// The tracking URI with any user:password@ removed.
std::string RedactUri(absl::string_view uri);
// Percent-encodes each '/'-separated segment, keeping the slashes.
std::string EncodePath(absl::string_view path);

// A log-batch split into requests within the limits, as JSON bodies (without run_id's quoting
// surprises: each body is complete). InvalidArgument for a bad key, a param given twice with
// different values, or one entity larger than kMaxBatchJsonBytes.
absl::StatusOr<std::vector<std::string>> SplitLogBatch(absl::string_view run_id,
                                                       const std::vector<Metric>& metrics,
                                                       const std::vector<Param>& params,
                                                       const std::vector<Tag>& tags);
}  // namespace internal

}  // namespace coach::mlflow
