#include "operator/backend/kube/client/rest_kube_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <mutex>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "operator/backend/kube/client/errors.h"
#include "spdlog/spdlog.h"

namespace coach::kubeclient {

using nlohmann::json;

std::string UrlEncode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool ReadableFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return static_cast<bool>(in);
}

// What one attempt produced.
struct Attempt {
  CURLcode curl = CURLE_OK;
  std::string curl_error;
  long code = 0;
  std::string body;  // the whole body, or (streams) the body of an error answer
  std::optional<absl::Duration> retry_after;
  bool priority_and_fairness = false;  // the answer carried an APF classification header
};

// Streaming state: bytes go to `sink` once the answer is known to be 2xx.
struct StreamState {
  CURL* handle = nullptr;
  Attempt* attempt = nullptr;
  std::function<bool(absl::string_view)>* sink = nullptr;  // nullptr: buffer everything
  bool checked = false;
  bool streaming = false;
  bool stopped_by_sink = false;
  const std::atomic<bool>* stop = nullptr;
};

size_t WriteCallback(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  size_t len = size * n;
  if (!st->checked) {
    st->checked = true;
    long code = 0;
    curl_easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &code);
    st->streaming = st->sink != nullptr && code >= 200 && code < 300;
  }
  if (!st->streaming) {
    if (st->attempt->body.size() < (64u << 20)) st->attempt->body.append(data, len);
    return len;
  }
  if (!(*st->sink)(absl::string_view(data, len))) {
    st->stopped_by_sink = true;
    return 0;  // CURLE_WRITE_ERROR ends the transfer
  }
  return len;
}

size_t HeaderCallback(char* data, size_t size, size_t n, void* user) {
  auto* attempt = static_cast<Attempt*>(user);
  size_t len = size * n;
  absl::string_view line(data, len);
  if (absl::StartsWithIgnoreCase(line, "HTTP/")) attempt->retry_after.reset();  // new response
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    attempt->retry_after = ParseRetryAfter(line.substr(12));
  }
  if (absl::StartsWithIgnoreCase(line, "x-kubernetes-pf-flowschema-uid:")) {
    attempt->priority_and_fairness = true;
  }
  return len;
}

int ProgressCallback(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<StreamState*>(user);
  return st->stop != nullptr && st->stop->load() ? 1 : 0;
}

bool ConnectionNeverMade(CURLcode c) {
  return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY;
}

}  // namespace

struct RestKubeClient::Impl {
  CURLSH* share = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> share_locks;
  std::mutex pool_mu;
  std::vector<CURL*> pool;
  std::unique_ptr<TokenSource> tokens;
  std::mutex rng_mu;
  std::mt19937_64 rng{std::random_device{}()};

  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Impl*>(user)->share_locks[data].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Impl*>(user)->share_locks[data].unlock();
  }

  CURL* Acquire() {
    {
      std::lock_guard<std::mutex> l(pool_mu);
      if (!pool.empty()) {
        CURL* h = pool.back();
        pool.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }
  void Release(CURL* h, bool reusable) {
    if (h == nullptr) return;
    if (!reusable) {
      curl_easy_cleanup(h);
      return;
    }
    curl_easy_reset(h);  // keeps the handle's connection cache
    std::lock_guard<std::mutex> l(pool_mu);
    if (pool.size() < 32) {
      pool.push_back(h);
    } else {
      curl_easy_cleanup(h);
    }
  }
  double Jitter(double max) {
    std::lock_guard<std::mutex> l(rng_mu);
    return std::uniform_real_distribution<double>(0.0, max)(rng);
  }

  ~Impl() {
    for (CURL* h : pool) curl_easy_cleanup(h);
    if (share != nullptr) curl_share_cleanup(share);
  }
};

RestKubeClient::RestKubeClient(KubeConfig config, RestKubeClientOptions options)
    : config_(std::move(config)), options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  limiter_ = options_.rate_limiter != nullptr
                 ? options_.rate_limiter
                 : std::make_shared<TokenBucketRateLimiter>(options_.qps, options_.burst);
  impl_->tokens = std::make_unique<TokenSource>(config_);
  impl_->share = curl_share_init();
  curl_share_setopt(impl_->share, CURLSHOPT_LOCKFUNC, &Impl::Lock);
  curl_share_setopt(impl_->share, CURLSHOPT_UNLOCKFUNC, &Impl::Unlock);
  curl_share_setopt(impl_->share, CURLSHOPT_USERDATA, impl_.get());
  curl_share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(impl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
}

RestKubeClient::~RestKubeClient() = default;

absl::StatusOr<std::unique_ptr<RestKubeClient>> RestKubeClient::Create(const KubeConfig& config,
                                                                       RestKubeClientOptions options) {
  GlobalInit();
  if (config.server.empty()) return absl::InvalidArgumentError("kube client: server is empty");
  if (!config.tls_server_name.empty()) {
    // libcurl cannot verify against a name other than the URL's host.
    return absl::InvalidArgumentError(absl::StrCat(config.source, ": tls-server-name: not supported"));
  }
  for (const auto& [field, path] : {std::pair<const char*, const std::string&>{"certificate-authority", config.ca_file},
                                    {"client-certificate", config.client_cert_file},
                                    {"client-key", config.client_key_file}}) {
    if (!path.empty() && !ReadableFile(path)) {
      return absl::InvalidArgumentError(absl::StrCat(config.source, ": ", field, ": cannot read ", path));
    }
  }
  return std::unique_ptr<RestKubeClient>(new RestKubeClient(config, std::move(options)));
}

namespace {

// One HTTP exchange on `h`. `sink` non-null streams a 2xx body.
Attempt PerformOnce(CURL* h, CURLSH* share, const KubeConfig& cfg, const RestKubeClientOptions& opt,
                    const std::string& url, const HttpRequest& req, const std::string& token,
                    std::function<bool(absl::string_view)>* sink, const std::atomic<bool>* stop,
                    absl::Duration timeout, bool* stopped_by_sink) {
  Attempt a;
  StreamState st;
  st.handle = h;
  st.attempt = &a;
  st.sink = sink;
  st.stop = stop;
  char errbuf[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(h, CURLOPT_SHARE, share);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_USERAGENT, opt.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(opt.connect_timeout)));
  if (timeout > absl::ZeroDuration() && timeout != absl::InfiniteDuration()) {
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(timeout)));
  }
  if (opt.http2) curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteCallback);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, HeaderCallback);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, ProgressCallback);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);

  // Trust.
  if (cfg.insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  }
  struct curl_blob ca_blob, cert_blob, key_blob;
  if (!cfg.ca_pem.empty()) {
    ca_blob = {const_cast<char*>(cfg.ca_pem.data()), cfg.ca_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca_blob);
  } else if (!cfg.ca_file.empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, cfg.ca_file.c_str());
  }
  if (!cfg.client_cert_pem.empty()) {
    cert_blob = {const_cast<char*>(cfg.client_cert_pem.data()), cfg.client_cert_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert_blob);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!cfg.client_cert_file.empty()) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, cfg.client_cert_file.c_str());
  }
  if (!cfg.client_key_pem.empty()) {
    key_blob = {const_cast<char*>(cfg.client_key_pem.data()), cfg.client_key_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key_blob);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!cfg.client_key_file.empty()) {
    curl_easy_setopt(h, CURLOPT_SSLKEY, cfg.client_key_file.c_str());
  }

  struct curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "Expect:");
  std::string auth;
  if (!token.empty()) {
    auth = "Authorization: Bearer " + token;
    headers = curl_slist_append(headers, auth.c_str());
  }
  std::string ctype;
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    ctype = "Content-Type: " + req.content_type;
    headers = curl_slist_append(headers, ctype.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (req.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    if (req.method != "POST") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (!req.body.empty() || req.method != "DELETE") {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    }
  }

  a.curl = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.code);
  if (a.curl != CURLE_OK) a.curl_error = errbuf[0] != 0 ? errbuf : curl_easy_strerror(a.curl);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  // Scrub the token copy.
  std::fill(auth.begin(), auth.end(), '\0');
  *stopped_by_sink = st.stopped_by_sink;
  return a;
}

}  // namespace

absl::StatusOr<HttpResponse> RestKubeClient::Do(const HttpRequest& request) {
  return Send(request, nullptr, nullptr, options_.request_timeout, true);
}

// The common request loop: rate limit, auth, retries.
absl::StatusOr<HttpResponse> RestKubeClient::Send(const HttpRequest& req,
                                                  std::function<bool(absl::string_view)>* sink,
                                                  const std::atomic<bool>* stop, absl::Duration timeout,
                                                  bool retries) {
  Impl* impl = impl_.get();
  const KubeConfig& cfg = config_;
  const RestKubeClientOptions& opt = options_;
  TokenBucketRateLimiter& limiter = *limiter_;
  std::atomic<int64_t>& sent = requests_sent_;
  std::string url = cfg.server + req.path;
  if (!req.query.empty()) {
    url += '?';
    bool first = true;
    for (const auto& [k, v] : req.query) {
      if (!first) url += '&';
      first = false;
      absl::StrAppend(&url, UrlEncode(k), "=", UrlEncode(v));
    }
  }
  std::string what = absl::StrCat(req.method, " ", req.path);
  absl::Duration backoff = opt.retry.initial_backoff;
  int attempts = retries ? std::max(1, opt.retry.max_attempts) : 1;
  bool reauthed = false;
  absl::Status last;
  for (int i = 0; i < attempts; ++i) {
    if (!limiter.Wait(absl::InfiniteFuture(), stop)) return absl::CancelledError(what + ": stopped");
    auto token = impl->tokens->Token();
    if (!token.ok()) return token.status();
    CURL* h = impl->Acquire();
    if (h == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
    bool stopped_by_sink = false;
    sent.fetch_add(1);
    Attempt a = PerformOnce(h, impl->share, cfg, opt, url, req, *token, sink, stop, timeout, &stopped_by_sink);
    impl->Release(h, a.curl == CURLE_OK);
    if (a.priority_and_fairness && opt.lift_limit_on_apf && limiter.Lift()) {
      spdlog::info("kube: the API server enforces API Priority and Fairness: client-side rate limit "
                   "({} qps, burst {}) lifted",
                   limiter.qps(), limiter.burst());
    }
    SPDLOG_DEBUG("kube: {} -> {} {}", what, a.code, static_cast<int>(a.curl));

    if (stopped_by_sink) return HttpResponse{a.code, ""};
    if (a.curl == CURLE_ABORTED_BY_CALLBACK) return absl::CancelledError(what + ": stopped");
    bool never_sent = false;
    if (a.curl != CURLE_OK) {
      if (a.curl == CURLE_OPERATION_TIMEDOUT) {
        last = absl::DeadlineExceededError(absl::StrCat(what, ": ", a.curl_error));
        if (sink != nullptr || !req.idempotent) return last;
      } else if (sink != nullptr && a.code >= 200 && a.code < 300) {
        // A stream that broke after it started: the caller resumes from what it saw.
        return absl::UnavailableError(absl::StrCat(what, ": stream broken: ", a.curl_error));
      } else {
        never_sent = ConnectionNeverMade(a.curl);
        last = absl::UnavailableError(absl::StrCat(what, ": ", a.curl_error));
        if (a.curl == CURLE_SSL_CACERT || a.curl == CURLE_PEER_FAILED_VERIFICATION ||
            a.curl == CURLE_SSL_CERTPROBLEM || a.curl == CURLE_SSL_CACERT_BADFILE) {
          return absl::UnavailableError(absl::StrCat(what, ": TLS: ", a.curl_error));
        }
      }
    } else if (a.code >= 200 && a.code < 300) {
      return HttpResponse{a.code, std::move(a.body)};
    } else {
      last = StatusFromHttp(a.code, a.body, what, a.retry_after);
      if (a.code == 401 && !reauthed && !cfg.token_file.empty()) {
        reauthed = true;
        impl->tokens->Invalidate();
        ++attempts;  // a re-read token does not use up a retry
        continue;
      }
      if (!absl::IsUnavailable(last)) return last;
      never_sent = a.code == 429;
    }
    if (!req.idempotent && !never_sent) return last;
    if (i + 1 >= attempts) break;
    absl::Duration wait = backoff * (1.0 + impl->Jitter(opt.retry.jitter));
    if (auto ra = RetryAfter(last); ra.has_value()) wait = std::min(*ra, opt.retry.max_retry_after);
    backoff = std::min(backoff * 2, opt.retry.max_backoff);
    absl::Time until = absl::Now() + wait;
    while (absl::Now() < until) {
      if (stop != nullptr && stop->load()) return absl::CancelledError(what + ": stopped");
      absl::SleepFor(std::min(until - absl::Now(), absl::Milliseconds(50)));
    }
  }
  return last;
}

absl::StatusOr<json> RestKubeClient::DoJson(const HttpRequest& request) {
  ASSIGN_OR_RETURN(HttpResponse r, Do(request));
  auto j = json::parse(r.body, nullptr, false);
  if (j.is_discarded()) {
    return absl::InternalError(absl::StrCat(request.method, " ", request.path, ": the answer is not JSON"));
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

absl::StatusOr<json> RestKubeClient::Create(const ResourceDescriptor& resource, const std::string& ns,
                                            const json& object) {
  // The apiserver answers this with a 500, which would read as Unavailable and be retried
  // forever by callers; it is the caller's mistake, so say so here.
  if (!ResourceVersionOf(object).empty()) {
    return absl::InvalidArgumentError(absl::StrCat("POST ", resource.CollectionPath(ns),
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

absl::StatusOr<ListResult> RestKubeClient::List(const ResourceDescriptor& resource, const std::string& ns,
                                                const ListOptions& options) {
  HttpRequest r;
  r.path = resource.CollectionPath(ns);
  if (!options.label_selector.empty()) r.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) r.query.emplace_back("fieldSelector", options.field_selector);
  if (options.limit > 0) r.query.emplace_back("limit", absl::StrCat(options.limit));
  if (!options.continue_token.empty()) r.query.emplace_back("continue", options.continue_token);
  if (!options.resource_version.empty()) r.query.emplace_back("resourceVersion", options.resource_version);
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
  if (!options.resource_version.empty()) r.query.emplace_back("resourceVersion", options.resource_version);
  if (!options.label_selector.empty()) r.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) r.query.emplace_back("fieldSelector", options.field_selector);
  if (options.timeout_seconds > 0) r.query.emplace_back("timeoutSeconds", absl::StrCat(options.timeout_seconds));
  std::string what = "WATCH " + r.path;

  std::string pending;
  absl::Status event_status;  // set by an ERROR event or a malformed line
  std::function<bool(absl::string_view)> sink = [&](absl::string_view chunk) {
    pending.append(chunk.data(), chunk.size());
    size_t start = 0;
    while (true) {
      size_t nl = pending.find('\n', start);
      if (nl == std::string::npos) break;
      absl::string_view line = absl::StripAsciiWhitespace(absl::string_view(pending).substr(start, nl - start));
      start = nl + 1;
      if (line.empty()) continue;
      auto j = json::parse(line.begin(), line.end(), nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        event_status = absl::InternalError(absl::StrCat(what, ": malformed event: ", line.substr(0, 200)));
        return false;
      }
      std::string type = j["type"].get<std::string>();
      WatchEvent ev;
      ev.object = j.contains("object") ? std::move(j["object"]) : json::object();
      if (type == "ERROR") {
        event_status = StatusFromStatusObject(ev.object, what);
        return false;
      }
      if (type == "ADDED") ev.type = WatchEventType::kAdded;
      else if (type == "MODIFIED") ev.type = WatchEventType::kModified;
      else if (type == "DELETED") ev.type = WatchEventType::kDeleted;
      else if (type == "BOOKMARK") ev.type = WatchEventType::kBookmark;
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

absl::StatusOr<json> RestKubeClient::Update(const ResourceDescriptor& resource, const std::string& ns,
                                            const json& object) {
  std::string name = NameOf(object);
  if (name.empty()) return absl::InvalidArgumentError("Update: metadata.name is empty");
  return WriteObject("PUT", resource.ObjectPath(ns, name), object, true);
}

absl::StatusOr<json> RestKubeClient::DoPatch(const std::string& path, PatchType type, const json& patch) {
  HttpRequest r;
  r.method = "PATCH";
  r.path = path;
  r.body = patch.dump();
  r.content_type = PatchContentType(type);
  r.idempotent = type != PatchType::kJson;
  return DoJson(r);
}

absl::StatusOr<json> RestKubeClient::Patch(const ResourceDescriptor& resource, const std::string& ns,
                                           const std::string& name, PatchType type, const json& patch) {
  if (name.empty()) return absl::InvalidArgumentError("Patch: name is empty");
  return DoPatch(resource.ObjectPath(ns, name), type, patch);
}

absl::Status RestKubeClient::Delete(const ResourceDescriptor& resource, const std::string& ns,
                                    const std::string& name, const DeleteOptions& options) {
  if (name.empty()) return absl::InvalidArgumentError("Delete: name is empty");
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.precondition_uid.has_value()) body["preconditions"]["uid"] = *options.precondition_uid;
  if (options.precondition_resource_version.has_value()) {
    body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  switch (options.propagation) {
    case PropagationPolicy::kDefault: break;
    case PropagationPolicy::kOrphan: body["propagationPolicy"] = "Orphan"; break;
    case PropagationPolicy::kBackground: body["propagationPolicy"] = "Background"; break;
    case PropagationPolicy::kForeground: body["propagationPolicy"] = "Foreground"; break;
  }
  if (options.grace_period_seconds.has_value()) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  HttpRequest r;
  r.method = "DELETE";
  r.path = resource.ObjectPath(ns, name);
  r.body = body.dump();
  return Do(r).status();
}

absl::StatusOr<json> RestKubeClient::GetStatus(const ResourceDescriptor& resource, const std::string& ns,
                                               const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("GetStatus: name is empty");
  HttpRequest r;
  r.path = resource.ObjectPath(ns, name, "status");
  return DoJson(r);
}

absl::StatusOr<json> RestKubeClient::UpdateStatus(const ResourceDescriptor& resource, const std::string& ns,
                                                  const json& object) {
  std::string name = NameOf(object);
  if (name.empty()) return absl::InvalidArgumentError("UpdateStatus: metadata.name is empty");
  return WriteObject("PUT", resource.ObjectPath(ns, name, "status"), object, true);
}

absl::StatusOr<json> RestKubeClient::PatchStatus(const ResourceDescriptor& resource, const std::string& ns,
                                                 const std::string& name, PatchType type, const json& patch) {
  if (name.empty()) return absl::InvalidArgumentError("PatchStatus: name is empty");
  return DoPatch(resource.ObjectPath(ns, name, "status"), type, patch);
}

absl::Status RestKubeClient::StreamLogs(const std::string& ns, const std::string& pod, const LogOptions& options,
                                        const LogHandler& handler) {
  HttpRequest r;
  r.path = resources::Pods().ObjectPath(ns, pod, "log");
  if (!options.container.empty()) r.query.emplace_back("container", options.container);
  if (options.follow) r.query.emplace_back("follow", "true");
  if (options.tail_lines.has_value()) r.query.emplace_back("tailLines", absl::StrCat(*options.tail_lines));
  if (options.previous) r.query.emplace_back("previous", "true");
  if (options.timestamps) r.query.emplace_back("timestamps", "true");
  std::function<bool(absl::string_view)> sink = [&](absl::string_view chunk) { return handler(chunk); };
  auto res = Send(r, &sink, options.stop,
                  options.follow ? absl::InfiniteDuration() : options_.request_timeout, /*retries=*/!options.follow);
  return res.status();
}

}  // namespace coach::kubeclient
