#include "operator/webhook/admission_server.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace coach::webhook {
namespace {

using nlohmann::json;

constexpr absl::Duration kRetryAfterFailure = absl::Seconds(5);

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return text.str();
}

}  // namespace

RuntimeFinder RuntimesFromApiServer(kubeclient::KubeClient* client) {
  return [client](const std::string& kind, const std::string& ns,
                  const std::string& name) -> absl::StatusOr<std::optional<json>> {
    return kubeclient::GetTrainingRuntime(*client, kind, ns, name);
  };
}

AdmissionServer::AdmissionServer(AdmissionServerOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<AdmissionServer>> AdmissionServer::Start(
    kubeclient::KubeClient* client, RuntimeFinder find_runtime, AdmissionServerOptions options) {
  if (options.clock == nullptr || options.workers < 1 || options.refresh <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("admission server: bad options");
  }
  std::unique_ptr<AdmissionServer> server(new AdmissionServer(std::move(options)));
  const AdmissionServerOptions& o = server->options_;
  if (o.cert_dir.empty()) server->rotator_ = std::make_unique<CertRotator>(client, o.rotator);
  server->certificate_ = std::make_shared<server::ServingCertificate>();

  // A replica without a certificate would fail every handshake: wait for one (another replica
  // may be creating the Secret; the API server may be starting).
  const absl::Duration give_up = o.clock->Monotonic() + o.first_certificate_wait;
  absl::Status refreshed = server->Refresh();
  while (!refreshed.ok() && !absl::IsInvalidArgument(refreshed) && o.clock->Monotonic() < give_up) {
    spdlog::warn("admission webhooks: no serving certificate yet: {}",
                 std::string(refreshed.message()));
    absl::SleepFor(absl::Seconds(1));
    refreshed = server->Refresh();
  }
  if (!refreshed.ok()) {
    return absl::Status(refreshed.code(), absl::StrCat("admission webhooks: serving certificate: ",
                                                       refreshed.message()));
  }

  metrics::Family* reviews = nullptr;
  metrics::Family* latency = nullptr;
  if (o.registry != nullptr) {
    reviews = o.registry->Counter("coach_admission_reviews_total",
                                  "AdmissionReviews answered, by webhook and outcome "
                                  "(allowed, denied, patched, malformed, error)",
                                  {"webhook", "outcome"});
    latency = o.registry->Histogram(
        "coach_admission_review_duration_seconds", "Time to answer one AdmissionReview, by webhook",
        metrics::Registry::ExponentialBuckets(0.0005, 2, 16), {"webhook"});
  }
  Clock* clock = o.clock;
  server::Routes routes;
  for (const char* path : {kTrainJobDefaulterPath, kTrainJobValidatorPath,
                           kTrainingRuntimeValidatorPath, kClusterTrainingRuntimeValidatorPath}) {
    const std::string webhook = WebhookName(path);
    routes.push_back(server::Route{
        "POST", path,
        [path, webhook, find_runtime, clock, reviews,
         latency](const server::HttpRequest& request) -> server::HttpResponse {
          const absl::Duration began = clock->Monotonic();
          const ReviewAnswer answer = AnswerReview(path, request.body, find_runtime, clock->Now());
          if (reviews != nullptr) reviews->Add({webhook, answer.outcome});
          if (latency != nullptr) {
            latency->Observe({webhook}, absl::ToDoubleSeconds(clock->Monotonic() - began));
          }
          server::HttpResponse response;
          response.status = answer.http_status;
          response.content_type = answer.http_status == 200 ? "application/json" : "text/plain";
          response.body = answer.body;
          return response;
        }});
  }
  server::HttpServerOptions http;
  http.workers = o.workers;
  http.max_body_bytes = kMaxReviewBytes;
  // 16 reviews of the largest size at once; past that, 503 before a body is read.
  http.max_buffered_body_bytes = 16 * kMaxReviewBytes;
  // The API server gives a webhook 10 s (upstream's configurations set no timeoutSeconds).
  http.request_timeout = absl::Seconds(10);
  http.idle_timeout = absl::Seconds(90);  // its kept-alive connections, as Go's transport keeps
  http.max_request_head_bytes = 16 * 1024;
  http.tls = server->certificate_;
  http.tls_client_ca_pem = o.client_ca_pem;
  http.clock = o.clock;
  absl::StatusOr<std::unique_ptr<server::HttpServer>> listening =
      server::HttpServer::Serve(o.listen, std::move(routes), http);
  if (!listening.ok()) {
    return absl::Status(listening.status().code(),
                        absl::StrCat("--webhook-listen: ", listening.status().message()));
  }
  server->http_ = *std::move(listening);
  server->refresher_ = std::thread([s = server.get()] { s->RefreshLoop(); });
  return server;
}

absl::Status AdmissionServer::Refresh() {
  std::string cert_pem;
  std::string key_pem;
  if (rotator_ != nullptr) {
    ASSIGN_OR_RETURN(ServingMaterial material, rotator_->Sync());
    if (!material.ca_bundle.ok()) {
      spdlog::warn("admission webhooks: the API server may not trust this certificate yet: {}",
                   std::string(material.ca_bundle.message()));
    }
    cert_pem = std::move(material.cert_pem);
    key_pem = std::move(material.key_pem);
  } else {
    ASSIGN_OR_RETURN(cert_pem, ReadFile(absl::StrCat(options_.cert_dir, "/tls.crt")));
    ASSIGN_OR_RETURN(key_pem, ReadFile(absl::StrCat(options_.cert_dir, "/tls.key")));
  }
  if (cert_pem == served_cert_pem_) return absl::OkStatus();
  RETURN_IF_ERROR(certificate_->Set(cert_pem, key_pem));
  const bool first = served_cert_pem_.empty();
  served_cert_pem_ = std::move(cert_pem);
  spdlog::info("admission webhooks: {} serving certificate from {}", first ? "a" : "a new",
               rotator_ != nullptr ? absl::StrCat("Secret ", options_.rotator.secret_namespace, "/",
                                                  options_.rotator.secret_name)
                                   : options_.cert_dir);
  return absl::OkStatus();
}

void AdmissionServer::RefreshLoop() {
  absl::Duration wait = options_.refresh;
  while (!stop_.WaitForNotificationWithTimeout(wait)) {
    const absl::Status refreshed = Refresh();
    if (!refreshed.ok()) {
      // The certificate being served stays: it is valid for months after a renewal is due.
      spdlog::warn("admission webhooks: refreshing the serving certificate: {}",
                   std::string(refreshed.message()));
    }
    wait = refreshed.ok() ? options_.refresh : kRetryAfterFailure;
  }
}

AdmissionServer::~AdmissionServer() { Stop(); }

void AdmissionServer::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (refresher_.joinable()) refresher_.join();
  if (http_ != nullptr) http_->Stop();
}

}  // namespace coach::webhook
