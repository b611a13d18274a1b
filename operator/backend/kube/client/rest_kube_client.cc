#include "operator/backend/kube/client/rest_kube_client.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/http/curl_transport.h"
#include "common/http/retry.h"
#include "common/http/url.h"
#include "common/status_macros.h"
#include "operator/backend/kube/client/errors.h"
#include "spdlog/spdlog.h"

namespace coach::kubeclient {

using nlohmann::json;

namespace {

bool ReadableFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return static_cast<bool>(in);
}

http::CurlTransportOptions TransportOptions(const KubeConfig& cfg,
                                            const RestKubeClientOptions& opt) {
  http::CurlTransportOptions t;
  t.tls.insecure_skip_verify = cfg.insecure_skip_tls_verify;
  t.tls.ca_pem = cfg.ca_pem;
  t.tls.ca_file = cfg.ca_file;
  t.tls.client_cert_pem = cfg.client_cert_pem;
  t.tls.client_cert_file = cfg.client_cert_file;
  t.tls.client_key_pem = cfg.client_key_pem;
  t.tls.client_key_file = cfg.client_key_file;
  t.connect_timeout = opt.connect_timeout;
  t.user_agent = opt.user_agent;
  t.http2 = opt.http2;
  // A list or an error answer larger than this is not one the API server sends; the cut keeps
  // a misbehaving endpoint from taking the operator's memory.
  t.max_body_bytes = 64u << 20;
  return t;
}

}  // namespace

RestKubeClient::RestKubeClient(KubeConfig config, RestKubeClientOptions options,
                               std::unique_ptr<http::Transport> transport)
    : config_(std::move(config)), options_(std::move(options)), transport_(std::move(transport)) {
  limiter_ = options_.rate_limiter != nullptr ? options_.rate_limiter
                                              : std::make_shared<TokenBucketRateLimiter>(
                                                    options_.qps, options_.burst, options_.clock);
  tokens_ = std::make_unique<TokenSource>(config_, absl::ZeroDuration(), options_.clock);
}

RestKubeClient::~RestKubeClient() = default;

absl::StatusOr<std::unique_ptr<RestKubeClient>> RestKubeClient::Create(
    const KubeConfig& config, RestKubeClientOptions options) {
  if (config.server.empty()) return absl::InvalidArgumentError("kube client: server is empty");
  if (!config.tls_server_name.empty()) {
    // libcurl cannot verify against a name other than the URL's host.
    return absl::InvalidArgumentError(
        absl::StrCat(config.source, ": tls-server-name: not supported"));
  }
  for (const auto& [field, path] :
       {std::pair<const char*, const std::string&>{"certificate-authority", config.ca_file},
        {"client-certificate", config.client_cert_file},
        {"client-key", config.client_key_file}}) {
    if (!path.empty() && !ReadableFile(path)) {
      return absl::InvalidArgumentError(
          absl::StrCat(config.source, ": ", field, ": cannot read ", path));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<http::CurlTransport> transport,
                   http::CurlTransport::Create(TransportOptions(config, options)));
  return std::unique_ptr<RestKubeClient>(
      new RestKubeClient(config, std::move(options), std::move(transport)));
}

absl::StatusOr<HttpResponse> RestKubeClient::Do(const HttpRequest& request) {
  return Send(request, nullptr, nullptr, options_.request_timeout, true);
}

bool RestKubeClient::Sleep(absl::Duration wait, const std::atomic<bool>* stop) {
  Clock* clock = options_.clock;
  const absl::Time until = clock->Now() + wait;
  for (absl::Time now = clock->Now(); now < until; now = clock->Now()) {
    if (stop != nullptr && stop->load()) return false;
    absl::SleepFor(std::min(until - now, absl::Milliseconds(50)));
  }
  return true;
}

// The common request loop: rate limit, auth, retries.
absl::StatusOr<HttpResponse> RestKubeClient::Send(const HttpRequest& req,
                                                  const http::ChunkSink* sink,
                                                  const std::atomic<bool>* stop,
                                                  absl::Duration timeout, bool retries) {
  const RestKubeClientOptions& opt = options_;
  http::Request wire;
  wire.method = req.method;
  wire.url = http::WithQuery(config_.server + req.path, req.query);
  wire.timeout = timeout;
  http::SendOptions send_options;
  send_options.sink = sink;
  send_options.cancel = stop;
  const std::string what = absl::StrCat(req.method, " ", req.path);
  int attempts = retries ? std::max(1, opt.retry.max_attempts) : 1;
  int retry = 0;
  bool reauthed = false;
  absl::Status last;
  for (int i = 0; i < attempts; ++i) {
    if (!limiter_->Wait(absl::InfiniteFuture(), stop))
      return absl::CancelledError(what + ": stopped");
    auto token = tokens_->Token();
    if (!token.ok()) return token.status();
    wire.headers = {{"Accept", "application/json"}};
    if (!token->empty()) wire.headers.emplace_back("Authorization", "Bearer " + *token);
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      wire.headers.emplace_back("Content-Type", req.content_type);
    }
    wire.body = req.body;
    requests_sent_.fetch_add(1);
    http::Result a = transport_->Send(wire, send_options);
    // Scrub our copies of the token.
    for (auto& [name, value] : wire.headers) std::fill(value.begin(), value.end(), '\0');
    std::fill(token->begin(), token->end(), '\0');
    if (a.response.Header("X-Kubernetes-PF-FlowSchema-UID").has_value() && opt.lift_limit_on_apf &&
        limiter_->Lift()) {
      spdlog::info(
          "kube: the API server enforces API Priority and Fairness: client-side rate limit "
          "({} qps, burst {}) lifted",
          limiter_->qps(), limiter_->burst());
    }
    const long code = a.response.status;
    SPDLOG_DEBUG("kube: {} -> {} {}", what, code, http::FailureName(a.failure));

    if (a.failure == http::Failure::kStoppedBySink) return HttpResponse{code, ""};
    if (a.failure == http::Failure::kCancelled) return absl::CancelledError(what + ": stopped");
    bool never_sent = false;
    if (!a.answered()) {
      if (a.failure == http::Failure::kTimeout) {
        last = absl::DeadlineExceededError(absl::StrCat(what, ": ", a.error));
        if (sink != nullptr || !req.idempotent) return last;
      } else if (sink != nullptr && code >= 200 && code < 300) {
        // A stream that broke after it started: the caller resumes from what it saw.
        return absl::UnavailableError(absl::StrCat(what, ": stream broken: ", a.error));
      } else {
        never_sent = a.failure == http::Failure::kCouldNotConnect;
        last = absl::UnavailableError(absl::StrCat(what, ": ", a.error));
        if (a.failure == http::Failure::kTls) {
          return absl::UnavailableError(absl::StrCat(what, ": TLS: ", a.error));
        }
      }
    } else if (code >= 200 && code < 300) {
      return HttpResponse{code, std::move(a.response.body)};
    } else {
      std::optional<absl::Duration> retry_after;
      if (auto header = a.response.Header("Retry-After"); header.has_value()) {
        retry_after = http::ParseRetryAfterSeconds(*header);
      }
      last = StatusFromHttp(code, a.response.body, what, retry_after);
      if (code == 401 && !reauthed && !config_.token_file.empty()) {
        reauthed = true;
        tokens_->Invalidate();
        ++attempts;  // a re-read token does not use up a retry
        continue;
      }
      if (!absl::IsUnavailable(last)) return last;
      never_sent = code == 429;
    }
    if (!req.idempotent && !never_sent) return last;
    if (i + 1 >= attempts) break;
    ++retry;
    absl::Duration wait =
        http::ExponentialBackoff(opt.retry.initial_backoff, 2.0, opt.retry.max_backoff, retry) *
        (1.0 + opt.retry.jitter * http::UnitRandom());
    if (auto ra = RetryAfter(last); ra.has_value()) wait = std::min(*ra, opt.retry.max_retry_after);
    if (!Sleep(wait, stop)) return absl::CancelledError(what + ": stopped");
  }
  return last;
}

absl::StatusOr<json> RestKubeClient::DoJson(const HttpRequest& request) {
  ASSIGN_OR_RETURN(HttpResponse r, Do(request));
  auto j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) {
    return absl::InternalError(
        absl::StrCat(request.method, " ", request.path, ": the answer is not JSON"));
  }
  return j;
}

absl::StatusOr<json> RestKubeClient::WriteObject(const std::string& method, const std::string& path,
                                                 const json& object, bool idempotent) {
  HttpRequest r;
  r.method = method;
  r.path = path;
  r.body = object.dump();
  r.idempotent = idempotent;
  return DoJson(r);
}

absl::StatusOr<json> RestKubeClient::Create(const ResourceDescriptor& resource,
                                            const std::string& ns, const json& object) {
  // The apiserver answers this with a 500, which would read as Unavailable and be retried
  // forever by callers; it is the caller's mistake, so say so here.
  if (!ResourceVersionOf(object).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("POST ", resource.CollectionPath(ns),
                     ": metadata.resourceVersion must not be set on create"));
  }
  return WriteObject("POST", resource.CollectionPath(ns), object, false);
}

absl::StatusOr<json> RestKubeClient::Get(const ResourceDescriptor& resource, const std::string& ns,
                                         const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("Get: name is empty");
  HttpRequest r;
  r.path = resource.ObjectPath(ns, name);
  return DoJson(r);
}

absl::StatusOr<ListResult> RestKubeClient::List(const ResourceDescriptor& resource,
                                                const std::string& ns, const ListOptions& options) {
  HttpRequest r;
  r.path = resource.CollectionPath(ns);
  if (!options.label_selector.empty())
    r.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty())
    r.query.emplace_back("fieldSelector", options.field_selector);
  if (options.limit > 0) r.query.emplace_back("limit", absl::StrCat(options.limit));
  if (!options.continue_token.empty()) r.query.emplace_back("continue", options.continue_token);
  if (!options.resource_version.empty())
    r.query.emplace_back("resourceVersion", options.resource_version);
  ASSIGN_OR_RETURN(json list, DoJson(r));
  ListResult out;
  if (list.contains("items") && list["items"].is_array()) {
    out.items.reserve(list["items"].size());
    for (auto& item : list["items"]) {
      // The apiserver omits kind/apiVersion on items; fill them so items look like Get's.
      if (item.is_object()) {
        if (!item.contains("kind") && !resource.kind.empty()) item["kind"] = resource.kind;
        if (!item.contains("apiVersion")) item["apiVersion"] = resource.ApiVersion();
      }
      out.items.push_back(std::move(item));
    }
  }
  if (list.contains("metadata") && list["metadata"].is_object()) {
    out.resource_version = list["metadata"].value("resourceVersion", "");
    out.continue_token = list["metadata"].value("continue", "");
  }
  return out;
}

absl::Status RestKubeClient::Watch(const ResourceDescriptor& resource, const std::string& ns,
                                   const WatchOptions& options, const WatchHandler& handler) {
  HttpRequest r;
  r.path = resource.CollectionPath(ns);
  r.query.emplace_back("watch", "1");
  if (options.allow_bookmarks) r.query.emplace_back("allowWatchBookmarks", "true");
  if (!options.resource_version.empty())
    r.query.emplace_back("resourceVersion", options.resource_version);
  if (!options.label_selector.empty())
    r.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty())
    r.query.emplace_back("fieldSelector", options.field_selector);
  if (options.timeout_seconds > 0)
    r.query.emplace_back("timeoutSeconds", absl::StrCat(options.timeout_seconds));
  std::string what = "WATCH " + r.path;

  std::string pending;
  absl::Status event_status;  // set by an ERROR event or a malformed line
  http::ChunkSink sink = [&](absl::string_view chunk) {
    pending.append(chunk.data(), chunk.size());
    size_t start = 0;
    while (true) {
      size_t nl = pending.find('\n', start);
      if (nl == std::string::npos) break;
      absl::string_view line =
          absl::StripAsciiWhitespace(absl::string_view(pending).substr(start, nl - start));
      start = nl + 1;
      if (line.empty()) continue;
      auto j = json::parse(line.begin(), line.end(), nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        event_status =
            absl::InternalError(absl::StrCat(what, ": malformed event: ", line.substr(0, 200)));
        return false;
      }
      std::string type = j["type"].get<std::string>();
      WatchEvent ev;
      ev.object = j.contains("object") ? std::move(j["object"]) : json::object();
      if (type == "ERROR") {
        event_status = StatusFromStatusObject(ev.object, what);
        return false;
      }
      if (type == "ADDED")
        ev.type = WatchEventType::kAdded;
      else if (type == "MODIFIED")
        ev.type = WatchEventType::kModified;
      else if (type == "DELETED")
        ev.type = WatchEventType::kDeleted;
      else if (type == "BOOKMARK")
        ev.type = WatchEventType::kBookmark;
      else {
        event_status = absl::InternalError(absl::StrCat(what, ": unknown event type ", type));
        return false;
      }
      ev.resource_version = ResourceVersionOf(ev.object);
      if (!handler(ev)) return false;
    }
    pending.erase(0, start);
    return true;
  };
  absl::Duration timeout = options.timeout_seconds > 0 ? absl::Seconds(options.timeout_seconds + 30)
                                                       : absl::InfiniteDuration();
  auto res = Send(r, &sink, options.stop, timeout, /*retries=*/false);
  if (!event_status.ok()) return event_status;
  if (!res.ok()) return res.status();
  return absl::OkStatus();
}

absl::StatusOr<json> RestKubeClient::Update(const ResourceDescriptor& resource,
                                            const std::string& ns, const json& object) {
  std::string name = NameOf(object);
  if (name.empty()) return absl::InvalidArgumentError("Update: metadata.name is empty");
  return WriteObject("PUT", resource.ObjectPath(ns, name), object, true);
}

absl::StatusOr<json> RestKubeClient::DoPatch(const std::string& path, PatchType type,
                                             const json& patch) {
  HttpRequest r;
  r.method = "PATCH";
  r.path = path;
  r.body = patch.dump();
  r.content_type = PatchContentType(type);
  r.idempotent = type != PatchType::kJson;
  return DoJson(r);
}

absl::StatusOr<json> RestKubeClient::Patch(const ResourceDescriptor& resource,
                                           const std::string& ns, const std::string& name,
                                           PatchType type, const json& patch) {
  if (name.empty()) return absl::InvalidArgumentError("Patch: name is empty");
  return DoPatch(resource.ObjectPath(ns, name), type, patch);
}

absl::Status RestKubeClient::Delete(const ResourceDescriptor& resource, const std::string& ns,
                                    const std::string& name, const DeleteOptions& options) {
  if (name.empty()) return absl::InvalidArgumentError("Delete: name is empty");
  HttpRequest r;
  r.method = "DELETE";
  r.path = resource.ObjectPath(ns, name);
  r.body = DeleteOptionsBody(options).dump();
  return Do(r).status();
}

absl::StatusOr<json> RestKubeClient::GetStatus(const ResourceDescriptor& resource,
                                               const std::string& ns, const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("GetStatus: name is empty");
  HttpRequest r;
  r.path = resource.ObjectPath(ns, name, "status");
  return DoJson(r);
}

absl::StatusOr<json> RestKubeClient::UpdateStatus(const ResourceDescriptor& resource,
                                                  const std::string& ns, const json& object) {
  std::string name = NameOf(object);
  if (name.empty()) return absl::InvalidArgumentError("UpdateStatus: metadata.name is empty");
  return WriteObject("PUT", resource.ObjectPath(ns, name, "status"), object, true);
}

absl::StatusOr<json> RestKubeClient::PatchStatus(const ResourceDescriptor& resource,
                                                 const std::string& ns, const std::string& name,
                                                 PatchType type, const json& patch) {
  if (name.empty()) return absl::InvalidArgumentError("PatchStatus: name is empty");
  return DoPatch(resource.ObjectPath(ns, name, "status"), type, patch);
}

absl::Status RestKubeClient::StreamLogs(const std::string& ns, const std::string& pod,
                                        const LogOptions& options, const LogHandler& handler) {
  HttpRequest r;
  r.path = resources::Pods().ObjectPath(ns, pod, "log");
  if (!options.container.empty()) r.query.emplace_back("container", options.container);
  if (options.follow) r.query.emplace_back("follow", "true");
  if (options.tail_lines.has_value())
    r.query.emplace_back("tailLines", absl::StrCat(*options.tail_lines));
  if (options.previous) r.query.emplace_back("previous", "true");
  if (options.timestamps) r.query.emplace_back("timestamps", "true");
  http::ChunkSink sink = [&](absl::string_view chunk) { return handler(chunk); };
  auto res = Send(r, &sink, options.stop,
                  options.follow ? absl::InfiniteDuration() : options_.request_timeout,
                  /*retries=*/!options.follow);
  return res.status();
}

}  // namespace coach::kubeclient
