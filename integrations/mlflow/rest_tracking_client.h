#pragma once

// TrackingClient over MLflow's REST API, through common/http's CurlTransport (a pool of keep-alive
// connections shared by the client's threads).
//
// The pieces, one job each: rest_options.h (options, FromEnv), rest_errors.h (answers to absl
// codes, URI redaction), rest_retry.h (what is retried, backoff), rest_json.h (reading answers),
// log_batch.h (log-batch bodies within MLflow's limits); this file sends the requests.
//
// Auth and TLS follow the standard variables (RestTrackingOptions::FromEnv). Secrets (password,
// token, userinfo in the URI) never appear in logs or in returned statuses: messages name the
// method, the API path, the HTTP status and MLflow's error_code/message only.
//
// Retries: 408, 429, 500, 502, 503, 504 and connection/timeout errors are retried with exponential
// backoff and full jitter (RetryPolicy), honouring Retry-After (seconds or HTTP date, capped at
// max_backoff). POSTs are retried too, as the Python client does: a metric may land twice when a
// response is lost after the server stored it. Other errors return at once (write-once param
// conflicts included).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/http/transport.h"
#include "integrations/mlflow/rest_errors.h"  // internal::RedactUri, for callers that log a URI
#include "integrations/mlflow/rest_options.h"
#include "integrations/mlflow/tracking_client.h"

namespace coach::mlflow {

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
  absl::StatusOr<std::vector<std::string>> ListExperimentIds(int max_results) override;
  absl::Status LogBatch(absl::string_view run_id, const std::vector<Metric>& metrics,
                        const std::vector<Param>& params, const std::vector<Tag>& tags) override;
  absl::StatusOr<std::vector<Metric>> GetMetricHistory(absl::string_view run_id,
                                                       absl::string_view key) override;
  absl::Status UploadArtifact(absl::string_view run_id, absl::string_view path,
                              absl::string_view content) override;
  absl::StatusOr<std::string> DownloadArtifact(absl::string_view run_id,
                                               absl::string_view path) override;
  absl::StatusOr<std::vector<FileInfo>> ListArtifacts(absl::string_view run_id,
                                                      absl::string_view path,
                                                      int max_results) override;

  // The tracking URI without userinfo, for logs and UIs ("<uri>/#/experiments/<id>/runs/<run>").
  const std::string& redacted_uri() const { return redacted_uri_; }

  // Observability: HTTP requests sent (attempts, retries included) and retries taken.
  int64_t requests_sent() const { return requests_.load(std::memory_order_relaxed); }
  int64_t retries() const { return retries_.load(std::memory_order_relaxed); }

 private:
  RestTrackingClient(RestTrackingOptions options, std::unique_ptr<http::Transport> transport);

  // One request with retries; the body is JSON (POST) or raw (PUT). The returned status is already
  // mapped to an absl code. `path` is relative to the base URI ("/api/2.0/mlflow/...").
  absl::StatusOr<std::string> Call(const char* method, const std::string& path,
                                   const std::string& body, const char* content_type);
  absl::StatusOr<std::string> Post(const std::string& api, const std::string& json);
  absl::StatusOr<std::string> Get(const std::string& api, const std::string& query);
  absl::StatusOr<std::string> ArtifactPathFor(absl::string_view run_id, absl::string_view path);

  RestTrackingOptions options_;
  std::unique_ptr<http::Transport> transport_;
  std::string base_;  // the URI without trailing '/'
  std::string redacted_uri_;
  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> retries_{0};
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> artifact_root_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::mlflow
