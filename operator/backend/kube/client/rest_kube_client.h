#pragma once

// KubeClient over the API server's REST API with libcurl.
//
// - Auth and trust from a KubeConfig: CA (PEM bytes or file) with verification on unless the
//   config says insecure-skip-tls-verify; client certificate/key (PEM bytes or files); bearer
//   token (literal or a file re-read when it rotates; after a 401 it is re-read and the
//   request retried once). Tokens and keys are never logged.
// - One token-bucket rate limiter (qps, burst; 20/30 by default as upstream) for every request
//   of the client, shareable across clients. A watch or log stream takes one token to start.
//   With lift_limit_on_apf the limit is a fallback only: the first answer that shows the API
//   server classified the request under API Priority and Fairness (X-Kubernetes-PF-FlowSchema-UID
//   header) lifts it, because then the server protects itself, fairly across clients, and a
//   client-side limit only slows this client down (controller-runtime dropped its default
//   client-side limit for that reason). 429s and Retry-After are still honoured.
// - The wire is common/http's CurlTransport: connection reuse (a pool of keep-alive handles
//   sharing DNS and TLS sessions), TLS from the config, HTTP/2 over TLS when libcurl has it
//   (options.http2). This file adds what is Kubernetes' own: auth, the rate limit, retries and
//   the mapping of answers to statuses (errors.h).
// - Retries with exponential backoff and jitter for Unavailable outcomes (429, 5xx, connection
//   errors): GET, PUT, DELETE and merge/strategic PATCH always; POST and JSON PATCH only when the
//   request provably did not run (429, or the connection could not be made). A Retry-After
//   header is honoured (capped by retry.max_retry_after). Watches are never retried here (the
//   Reflector reconnects).
// - Request timeout for ordinary requests; streams have none unless the watch asks the server
//   for one (timeout_seconds + 30 s then).

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/http/transport.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rate_limiter.h"

namespace coach::kubeclient {

struct RetryOptions {
  int max_attempts = 5;  // including the first
  absl::Duration initial_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(10);
  double jitter = 0.2;  // fraction of the backoff added at random
  absl::Duration max_retry_after = absl::Seconds(60);
};

struct RestKubeClientOptions {
  double qps = kDefaultQps;
  int burst = kDefaultBurst;
  // When set, used instead of a limiter made from qps/burst (shared between clients).
  std::shared_ptr<TokenBucketRateLimiter> rate_limiter;
  // Lift the limiter (shared ones too) once the server shows it enforces API Priority and
  // Fairness. Off: the limit always applies (an explicit --kube-api-qps).
  bool lift_limit_on_apf = false;
  absl::Duration request_timeout = absl::Seconds(30);
  absl::Duration connect_timeout = absl::Seconds(10);
  RetryOptions retry;
  bool http2 = true;
  std::string user_agent = "coach-operator/1 (kubeflow.org/v1)";
  // Retry waits and the limiter made from qps/burst read this clock (a shared rate_limiter
  // keeps its own).
  Clock* clock = Clock::Real();
};

struct HttpRequest {
  std::string method = "GET";
  std::string path;                                        // "/api/v1/namespaces/x/pods"
  std::vector<std::pair<std::string, std::string>> query;  // escaped by the client
  std::string body;
  std::string content_type = "application/json";
  bool idempotent = true;
};

struct HttpResponse {
  long code = 0;
  std::string body;
};

class RestKubeClient : public KubeClient {
 public:
  // InvalidArgument: the config lacks a server or names files that cannot be read.
  static absl::StatusOr<std::unique_ptr<RestKubeClient>> Create(const KubeConfig& config,
                                                                RestKubeClientOptions options = {});
  ~RestKubeClient() override;
  RestKubeClient(const RestKubeClient&) = delete;
  RestKubeClient& operator=(const RestKubeClient&) = delete;

  absl::StatusOr<nlohmann::json> Create(const ResourceDescriptor& resource, const std::string& ns,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Get(const ResourceDescriptor& resource, const std::string& ns,
                                     const std::string& name) override;
  absl::StatusOr<ListResult> List(const ResourceDescriptor& resource, const std::string& ns,
                                  const ListOptions& options) override;
  absl::Status Watch(const ResourceDescriptor& resource, const std::string& ns,
                     const WatchOptions& options, const WatchHandler& handler) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceDescriptor& resource, const std::string& ns,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Patch(const ResourceDescriptor& resource, const std::string& ns,
                                       const std::string& name, PatchType type,
                                       const nlohmann::json& patch) override;
  absl::Status Delete(const ResourceDescriptor& resource, const std::string& ns,
                      const std::string& name, const DeleteOptions& options) override;
  absl::StatusOr<nlohmann::json> GetStatus(const ResourceDescriptor& resource,
                                           const std::string& ns, const std::string& name) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceDescriptor& resource,
                                              const std::string& ns,
                                              const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> PatchStatus(const ResourceDescriptor& resource,
                                             const std::string& ns, const std::string& name,
                                             PatchType type, const nlohmann::json& patch) override;
  absl::Status StreamLogs(const std::string& ns, const std::string& pod, const LogOptions& options,
                          const LogHandler& handler) override;

  // Any request, with the client's auth, rate limit and retries; a non-2xx answer is mapped
  // to its status (errors.h). For discovery, /version, subresources not covered above.
  absl::StatusOr<HttpResponse> Do(const HttpRequest& request);
  // Do + parse the body as JSON (Internal when it is not JSON).
  absl::StatusOr<nlohmann::json> DoJson(const HttpRequest& request);

  const KubeConfig& config() const { return config_; }
  TokenBucketRateLimiter& rate_limiter() { return *limiter_; }
  // Requests sent (attempts, including retries and streams): for tests and metrics.
  int64_t requests_sent() const { return requests_sent_.load(); }

 private:
  RestKubeClient(KubeConfig config, RestKubeClientOptions options,
                 std::unique_ptr<http::Transport> transport);

  absl::StatusOr<nlohmann::json> WriteObject(const std::string& method, const std::string& path,
                                             const nlohmann::json& object, bool idempotent);
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request, const http::ChunkSink* sink,
                                    const std::atomic<bool>* stop, absl::Duration timeout,
                                    bool retries);
  // Waits `wait` on the client's clock; false when `stop` was raised meanwhile.
  bool Sleep(absl::Duration wait, const std::atomic<bool>* stop);
  absl::StatusOr<nlohmann::json> DoPatch(const std::string& path, PatchType type,
                                         const nlohmann::json& patch);

  KubeConfig config_;
  RestKubeClientOptions options_;
  std::shared_ptr<TokenBucketRateLimiter> limiter_;
  std::unique_ptr<http::Transport> transport_;
  std::unique_ptr<TokenSource> tokens_;
  std::atomic<int64_t> requests_sent_{0};
};

}  // namespace coach::kubeclient
