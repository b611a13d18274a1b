#include "integrations/mlflow/rest_tracking_client.h"

#include <curl/curl.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow {

using json = nlohmann::json;

namespace internal {

bool IsRetryableHttpStatus(long s) {
  return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

absl::Status MapHttpError(long s, absl::string_view body, absl::string_view what) {
  if (s >= 200 && s < 300) return absl::OkStatus();
  std::string error_code;
  std::string message;
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) {
    if (auto it = parsed.find("error_code"); it != parsed.end() && it->is_string()) {
      error_code = it->get<std::string>();
    }
    if (auto it = parsed.find("message"); it != parsed.end() && it->is_string()) {
      message = it->get<std::string>();
    }
  } else {
    message = std::string(absl::StripAsciiWhitespace(body));
  }
  if (message.size() > 500) message = absl::StrCat(message.substr(0, 500), "...");
  std::string text = absl::StrCat("MLflow ", what, ": HTTP ", s,
                                  error_code.empty() ? "" : " ", error_code,
                                  message.empty() ? "" : ": ", message);
  if (s == 408 || s == 429 || s >= 500) return absl::UnavailableError(text);
  if (s == 401) return absl::UnauthenticatedError(text);
  if (s == 403) return absl::PermissionDeniedError(text);
  if (error_code == "RESOURCE_DOES_NOT_EXIST") return absl::NotFoundError(text);
  if (error_code == "RESOURCE_ALREADY_EXISTS" || error_code == "RESOURCE_CONFLICT") {
    return absl::AlreadyExistsError(text);
  }
  if (error_code == "INVALID_PARAMETER_VALUE" || error_code == "BAD_REQUEST" ||
      error_code == "MALFORMED_REQUEST") {
    return absl::InvalidArgumentError(text);
  }
  if (error_code == "UNAUTHENTICATED") return absl::UnauthenticatedError(text);
  if (error_code == "PERMISSION_DENIED") return absl::PermissionDeniedError(text);
  switch (s) {
    case 400: return absl::InvalidArgumentError(text);
    case 404: return absl::NotFoundError(text);
    case 409: return absl::AlreadyExistsError(text);
    default: return absl::FailedPreconditionError(text);
  }
}

std::optional<absl::Duration> ParseRetryAfter(absl::string_view value, absl::Time now) {
  value = absl::StripAsciiWhitespace(value);
  if (value.empty()) return std::nullopt;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(value, &seconds)) {
    if (seconds < 0) return std::nullopt;
    return absl::Seconds(seconds);
  }
  absl::Time when;
  std::string err;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", std::string(value), absl::UTCTimeZone(), &when,
                      &err)) {
    return std::max(absl::ZeroDuration(), when - now);
  }
  return std::nullopt;
}

absl::Duration BackoffDelay(const RetryPolicy& policy, int retry,
                            std::optional<absl::Duration> retry_after, double unit_random) {
  double factor = std::pow(policy.multiplier, std::max(0, retry - 1));
  absl::Duration backoff = policy.initial_backoff * factor;
  if (backoff > policy.max_backoff || backoff < absl::ZeroDuration()) backoff = policy.max_backoff;
  backoff += policy.max_jitter * unit_random;
  if (retry_after.has_value()) {
    backoff = std::max(backoff, std::min(*retry_after, policy.max_backoff));
  }
  return backoff;
}

std::string RedactUri(absl::string_view uri) {
  size_t scheme = uri.find("://");
  size_t start = scheme == absl::string_view::npos ? 0 : scheme + 3;
  size_t end = uri.find('/', start);
  absl::string_view authority =
      uri.substr(start, end == absl::string_view::npos ? absl::string_view::npos : end - start);
  size_t at = authority.rfind('@');
  if (at == absl::string_view::npos) return std::string(uri);
  return absl::StrCat(uri.substr(0, start), authority.substr(at + 1),
                      end == absl::string_view::npos ? "" : uri.substr(end));
}

namespace {
std::string PercentEncode(absl::string_view s, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

json MetricJson(const Metric& m) {
  json j = {{"key", m.key}, {"timestamp", m.timestamp_ms}, {"step", m.step}};
  if (std::isnan(m.value)) {
    j["value"] = "NaN";
  } else if (std::isinf(m.value)) {
    j["value"] = m.value > 0 ? "Infinity" : "-Infinity";
  } else {
    j["value"] = m.value;
  }
  return j;
}
}  // namespace

std::string EncodePath(absl::string_view path) { return PercentEncode(path, /*keep_slash=*/true); }

absl::StatusOr<std::vector<std::string>> SplitLogBatch(absl::string_view run_id,
                                                       const std::vector<Metric>& metrics,
                                                       const std::vector<Param>& params,
                                                       const std::vector<Tag>& tags) {
  // Params: one per key (write-once), conflicts refused before anything is sent.
  std::vector<const Param*> unique_params;
  absl::flat_hash_map<absl::string_view, const Param*> seen;
  for (const Param& p : params) {
    RETURN_IF_ERROR(ValidateKey(p.key));
    auto [it, inserted] = seen.emplace(p.key, &p);
    if (inserted) {
      unique_params.push_back(&p);
    } else if (it->second->value != p.value) {
      return absl::InvalidArgumentError(
          absl::StrCat("param \"", p.key, "\" given twice with different values (params are write-once)"));
    }
  }
  // Tags: the last value per key wins, as if set one after the other.
  std::vector<const Tag*> unique_tags;
  absl::flat_hash_map<absl::string_view, size_t> tag_index;
  for (const Tag& t : tags) {
    RETURN_IF_ERROR(ValidateKey(t.key));
    auto [it, inserted] = tag_index.emplace(t.key, unique_tags.size());
    if (inserted) {
      unique_tags.push_back(&t);
    } else {
      unique_tags[it->second] = &t;
    }
  }
  for (const Metric& m : metrics) RETURN_IF_ERROR(ValidateKey(m.key));

  std::vector<std::string> bodies;
  const std::string head = absl::StrCat("{\"run_id\":", json(std::string(run_id)).dump());
  struct Chunk {
    std::vector<std::string> metrics, params, tags;
    size_t bytes = 0;
    size_t entities() const { return metrics.size() + params.size() + tags.size(); }
  } chunk;
  chunk.bytes = head.size() + 40;
  auto flush = [&] {
    if (chunk.entities() == 0) return;
    std::string body = head;
    absl::StrAppend(&body, ",\"metrics\":[", absl::StrJoin(chunk.metrics, ","), "]");
    absl::StrAppend(&body, ",\"params\":[", absl::StrJoin(chunk.params, ","), "]");
    absl::StrAppend(&body, ",\"tags\":[", absl::StrJoin(chunk.tags, ","), "]}");
    bodies.push_back(std::move(body));
    chunk = Chunk{};
    chunk.bytes = head.size() + 40;
  };
  auto add = [&](std::string entity, std::vector<std::string> Chunk::*list, size_t cap) -> absl::Status {
    if (entity.size() + head.size() + 40 > kMaxBatchJsonBytes) {
      return absl::InvalidArgumentError("one entity exceeds MLflow's 1 MB log-batch request limit");
    }
    if ((chunk.*list).size() >= cap || chunk.entities() >= static_cast<size_t>(kMaxEntitiesPerBatch) ||
        chunk.bytes + entity.size() + 1 > kMaxBatchJsonBytes) {
      flush();
    }
    chunk.bytes += entity.size() + 1;
    (chunk.*list).push_back(std::move(entity));
    return absl::OkStatus();
  };
  for (const Param* p : unique_params) {
    RETURN_IF_ERROR(add(json{{"key", p->key}, {"value", p->value}}.dump(), &Chunk::params,
                        kMaxParamsPerBatch));
  }
  for (const Tag* t : unique_tags) {
    RETURN_IF_ERROR(
        add(json{{"key", t->key}, {"value", t->value}}.dump(), &Chunk::tags, kMaxTagsPerBatch));
  }
  for (const Metric& m : metrics) {
    RETURN_IF_ERROR(add(MetricJson(m).dump(), &Chunk::metrics, kMaxMetricsPerBatch));
  }
  flush();
  return bodies;
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Options

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
      return absl::InvalidArgumentError("MLFLOW_HTTP_REQUEST_TIMEOUT must be a positive number of seconds");
    }
    o.request_timeout = absl::Seconds(seconds);
  }
  if (std::string r = get("MLFLOW_HTTP_REQUEST_MAX_RETRIES"); !r.empty()) {
    int retries = 0;
    if (!absl::SimpleAtoi(r, &retries) || retries < 0) {
      return absl::InvalidArgumentError("MLFLOW_HTTP_REQUEST_MAX_RETRIES must be a non-negative integer");
    }
    o.retry.max_attempts = retries + 1;
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// HTTP

namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One handle per thread: curl_easy_reset keeps its connection cache, so keep-alive connections
// are reused by every call this thread makes.
CURL* ThreadHandle() {
  thread_local std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
  return handle.get();
}

double UnitRandom() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

size_t WriteBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t ReadHeader(char* data, size_t size, size_t n, void* out) {
  absl::string_view line(data, size * n);
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    *static_cast<std::string*>(out) = std::string(absl::StripAsciiWhitespace(line.substr(12)));
  }
  return size * n;
}

bool IsFile(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

int64_t Int64Field(const json& j, const char* name, int64_t fallback = 0) {
  auto it = j.find(name);
  if (it == j.end()) return fallback;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number()) return static_cast<int64_t>(it->get<double>());
  if (it->is_string()) {
    int64_t v = 0;
    if (absl::SimpleAtoi(it->get<std::string>(), &v)) return v;
  }
  return fallback;
}

std::string StringField(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

Metric ParseMetric(const json& j) {
  Metric m;
  m.key = StringField(j, "key");
  m.timestamp_ms = Int64Field(j, "timestamp");
  m.step = Int64Field(j, "step");
  auto it = j.find("value");
  if (it != j.end()) {
    if (it->is_number()) {
      m.value = it->get<double>();
    } else if (it->is_string()) {
      std::string v = it->get<std::string>();
      if (v == "NaN") m.value = std::nan("");
      else if (v == "Infinity") m.value = INFINITY;
      else if (v == "-Infinity") m.value = -INFINITY;
      else absl::SimpleAtod(v, &m.value);
    }
  }
  return m;
}

RunInfo ParseRunInfo(const json& j) {
  RunInfo info;
  info.run_id = StringField(j, "run_id");
  if (info.run_id.empty()) info.run_id = StringField(j, "run_uuid");
  info.experiment_id = StringField(j, "experiment_id");
  info.run_name = StringField(j, "run_name");
  info.status = ParseRunStatus(StringField(j, "status")).value_or(RunStatus::kRunning);
  info.start_time_ms = Int64Field(j, "start_time");
  if (j.contains("end_time")) info.end_time_ms = Int64Field(j, "end_time");
  info.artifact_uri = StringField(j, "artifact_uri");
  info.lifecycle_stage = StringField(j, "lifecycle_stage");
  return info;
}

Run ParseRun(const json& j) {
  Run run;
  if (auto it = j.find("info"); it != j.end()) run.info = ParseRunInfo(*it);
  if (auto d = j.find("data"); d != j.end() && d->is_object()) {
    for (const json& m : d->value("metrics", json::array())) run.latest_metrics.push_back(ParseMetric(m));
    for (const json& p : d->value("params", json::array())) {
      run.params[StringField(p, "key")] = StringField(p, "value");
    }
    for (const json& t : d->value("tags", json::array())) {
      run.tags[StringField(t, "key")] = StringField(t, "value");
    }
  }
  return run;
}

absl::StatusOr<json> ParseJson(const std::string& body, absl::string_view what) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::UnavailableError(absl::StrCat("MLflow ", what, ": response is not JSON"));
  }
  return j;
}

json TagsJson(const std::vector<Tag>& tags) {
  json arr = json::array();
  for (const Tag& t : tags) arr.push_back({{"key", t.key}, {"value", t.value}});
  return arr;
}

}  // namespace

struct RestTrackingClient::HttpResponse {
  long status = 0;
  std::string body;
  std::string retry_after;
};

RestTrackingClient::RestTrackingClient(RestTrackingOptions options) : options_(std::move(options)) {
  base_ = std::string(absl::StripSuffix(options_.tracking_uri, "/"));
  redacted_uri_ = internal::RedactUri(base_);
}

absl::StatusOr<std::unique_ptr<RestTrackingClient>> RestTrackingClient::Create(
    RestTrackingOptions options) {
  const std::string& uri = options.tracking_uri;
  if (!absl::StartsWith(uri, "http://") && !absl::StartsWith(uri, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tracking URI \"", internal::RedactUri(uri), "\": only http:// and https:// servers are supported"));
  }
  if (options.retry.max_attempts < 1) return absl::InvalidArgumentError("retry.max_attempts must be >= 1");
  for (const std::string* path : {&options.server_cert_path, &options.client_cert_path}) {
    if (!path->empty() && !IsFile(*path)) {
      return absl::InvalidArgumentError(absl::StrCat("certificate file ", *path, " is not readable"));
    }
  }
  GlobalInitOnce();
  return std::unique_ptr<RestTrackingClient>(new RestTrackingClient(std::move(options)));
}

absl::StatusOr<std::unique_ptr<RestTrackingClient>> RestTrackingClient::FromEnv() {
  ASSIGN_OR_RETURN(RestTrackingOptions options, RestTrackingOptions::FromEnv());
  return Create(std::move(options));
}

absl::StatusOr<std::string> RestTrackingClient::Call(const char* method, const std::string& path,
                                                     const std::string& body,
                                                     const char* content_type) {
  const std::string what = absl::StrCat(method, " ", path.substr(0, path.find('?')));
  const std::string url = base_ + path;
  absl::Status last;
  for (int attempt = 1;; ++attempt) {
    CURL* h = ThreadHandle();
    if (h == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
    curl_easy_reset(h);
    HttpResponse response;
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(options_.request_timeout)));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ReadHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &response.retry_after);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "coach-mlflow/1");
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (!options_.username.empty()) {
      curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
      curl_easy_setopt(h, CURLOPT_USERNAME, options_.username.c_str());
      curl_easy_setopt(h, CURLOPT_PASSWORD, options_.password.c_str());
    }
    if (options_.insecure_tls) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!options_.server_cert_path.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options_.server_cert_path.c_str());
    if (!options_.client_cert_path.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLCERT, options_.client_cert_path.c_str());
      curl_easy_setopt(h, CURLOPT_SSLKEY, options_.client_cert_path.c_str());
    }
    struct curl_slist* headers = nullptr;
    // No "Expect: 100-continue": Python servers do not answer it and curl would wait a second.
    headers = curl_slist_append(headers, "Expect:");
    std::string auth_header;
    if (options_.username.empty() && !options_.token.empty()) {
      auth_header = absl::StrCat("Authorization: Bearer ", options_.token);
      headers = curl_slist_append(headers, auth_header.c_str());
    }
    std::string ct;
    if (content_type != nullptr) {
      ct = absl::StrCat("Content-Type: ", content_type);
      headers = curl_slist_append(headers, ct.c_str());
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (std::string_view(method) == "POST" || std::string_view(method) == "PUT") {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      if (std::string_view(method) == "PUT") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    requests_.fetch_add(1, std::memory_order_relaxed);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    // Do not leave secrets in the reused handle.
    curl_easy_setopt(h, CURLOPT_PASSWORD, "");

    bool retryable = false;
    std::optional<absl::Duration> retry_after;
    if (rc != CURLE_OK) {
      std::string detail = errbuf[0] != 0 ? errbuf : curl_easy_strerror(rc);
      std::string text = absl::StrCat("MLflow ", what, ": ", detail);
      switch (rc) {
        case CURLE_OPERATION_TIMEDOUT:
          last = absl::DeadlineExceededError(text);
          retryable = true;
          break;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_SSL_CONNECT_ERROR:
          last = absl::UnavailableError(text);
          retryable = true;
          break;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
          last = absl::InvalidArgumentError(text);
          break;
        default:
          // Certificate problems and the like: retrying will not fix them.
          last = absl::FailedPreconditionError(text);
          break;
      }
    } else {
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &response.status);
      if (response.status >= 200 && response.status < 300) return std::move(response.body);
      last = internal::MapHttpError(response.status, response.body, what);
      retryable = internal::IsRetryableHttpStatus(response.status);
      if (response.status == 500 && std::string_view(method) == "GET" &&
          absl::StrContains(path, "/mlflow-artifacts/") &&
          absl::StrContains(response.body, "No such file or directory")) {
        // The artifact proxy answers a missing file with a 500.
        return absl::NotFoundError(absl::StrCat("MLflow ", what, ": no such artifact"));
      }
      retry_after = internal::ParseRetryAfter(response.retry_after, absl::Now());
    }
    if (!retryable || attempt >= options_.retry.max_attempts) return last;
    retries_.fetch_add(1, std::memory_order_relaxed);
    absl::Duration wait = internal::BackoffDelay(options_.retry, attempt, retry_after, UnitRandom());
    std::this_thread::sleep_for(absl::ToChronoNanoseconds(wait));
  }
}

absl::StatusOr<std::string> RestTrackingClient::Post(const std::string& api, const std::string& body) {
  return Call("POST", absl::StrCat("/api/2.0/mlflow/", api), body, "application/json");
}

absl::StatusOr<std::string> RestTrackingClient::Get(const std::string& api, const std::string& query) {
  return Call("GET", absl::StrCat("/api/2.0/mlflow/", api, query.empty() ? "" : "?", query), "", nullptr);
}

// ---------------------------------------------------------------------------------------------
// Operations

absl::StatusOr<Experiment> RestTrackingClient::GetExperimentByName(absl::string_view name) {
  ASSIGN_OR_RETURN(std::string body,
                   Get("experiments/get-by-name",
                       absl::StrCat("experiment_name=", internal::EncodePath(name) /* '/' kept: legal in queries */)));
  ASSIGN_OR_RETURN(json j, ParseJson(body, "experiments/get-by-name"));
  const json& e = j.value("experiment", json::object());
  Experiment out;
  out.experiment_id = StringField(e, "experiment_id");
  out.name = StringField(e, "name");
  out.artifact_location = StringField(e, "artifact_location");
  out.lifecycle_stage = StringField(e, "lifecycle_stage");
  return out;
}

absl::StatusOr<std::string> RestTrackingClient::GetOrCreateExperiment(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("experiment name is empty");
  auto check = [&](const Experiment& e) -> absl::StatusOr<std::string> {
    if (e.lifecycle_stage == "deleted") {
      return absl::FailedPreconditionError(absl::StrCat(
          "MLflow experiment \"", name, "\" (", e.experiment_id,
          ") is deleted; restore it or choose another name"));
    }
    return e.experiment_id;
  };
  absl::StatusOr<Experiment> existing = GetExperimentByName(name);
  if (existing.ok()) return check(*existing);
  if (!absl::IsNotFound(existing.status())) return existing.status();
  absl::StatusOr<std::string> created =
      Post("experiments/create", json{{"name", std::string(name)}}.dump());
  if (created.ok()) {
    ASSIGN_OR_RETURN(json j, ParseJson(*created, "experiments/create"));
    return StringField(j, "experiment_id");
  }
  if (!absl::IsAlreadyExists(created.status())) return created.status();
  // Lost a race with another creator: theirs is ours.
  ASSIGN_OR_RETURN(Experiment raced, GetExperimentByName(name));
  return check(raced);
}

absl::StatusOr<RunInfo> RestTrackingClient::CreateRun(const CreateRunRequest& request) {
  if (request.experiment_id.empty()) return absl::InvalidArgumentError("experiment_id is empty");
  for (const Tag& t : request.tags) RETURN_IF_ERROR(ValidateKey(t.key));
  json j = {{"experiment_id", request.experiment_id},
            {"start_time", request.start_time_ms.value_or(NowMs())},
            {"tags", TagsJson(request.tags)}};
  if (!request.run_name.empty()) j["run_name"] = request.run_name;
  ASSIGN_OR_RETURN(std::string body, Post("runs/create", j.dump()));
  ASSIGN_OR_RETURN(json r, ParseJson(body, "runs/create"));
  return ParseRun(r.value("run", json::object())).info;
}

absl::StatusOr<Run> RestTrackingClient::GetRun(absl::string_view run_id) {
  ASSIGN_OR_RETURN(std::string body, Get("runs/get", absl::StrCat("run_id=", internal::EncodePath(run_id))));
  ASSIGN_OR_RETURN(json r, ParseJson(body, "runs/get"));
  return ParseRun(r.value("run", json::object()));
}

absl::StatusOr<RunInfo> RestTrackingClient::UpdateRun(const UpdateRunRequest& request) {
  json j = {{"run_id", request.run_id}};
  if (request.status) j["status"] = RunStatusName(*request.status);
  if (request.end_time_ms) j["end_time"] = *request.end_time_ms;
  if (request.run_name) j["run_name"] = *request.run_name;
  ASSIGN_OR_RETURN(std::string body, Post("runs/update", j.dump()));
  ASSIGN_OR_RETURN(json r, ParseJson(body, "runs/update"));
  return ParseRunInfo(r.value("run_info", json::object()));
}

absl::StatusOr<std::vector<RunInfo>> RestTrackingClient::SearchRuns(const SearchRunsRequest& request) {
  std::vector<RunInfo> out;
  std::string page_token;
  while (static_cast<int>(out.size()) < request.max_results) {
    json j = {{"experiment_ids", request.experiment_ids},
              {"max_results", std::min(1000, request.max_results - static_cast<int>(out.size()))},
              {"order_by", json::array({"attributes.start_time DESC"})}};
    if (!request.filter.empty()) j["filter"] = request.filter;
    if (!page_token.empty()) j["page_token"] = page_token;
    ASSIGN_OR_RETURN(std::string body, Post("runs/search", j.dump()));
    ASSIGN_OR_RETURN(json r, ParseJson(body, "runs/search"));
    for (const json& run : r.value("runs", json::array())) out.push_back(ParseRun(run).info);
    page_token = StringField(r, "next_page_token");
    if (page_token.empty()) break;
  }
  return out;
}

absl::Status RestTrackingClient::LogBatch(absl::string_view run_id, const std::vector<Metric>& metrics,
                                          const std::vector<Param>& params,
                                          const std::vector<Tag>& tags) {
  if (run_id.empty()) return absl::InvalidArgumentError("run_id is empty");
  ASSIGN_OR_RETURN(std::vector<std::string> bodies,
                   internal::SplitLogBatch(run_id, metrics, params, tags));
  for (const std::string& body : bodies) {
    RETURN_IF_ERROR(Post("runs/log-batch", body).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Metric>> RestTrackingClient::GetMetricHistory(absl::string_view run_id,
                                                                         absl::string_view key) {
  std::vector<Metric> out;
  std::string page_token;
  for (;;) {
    std::string query = absl::StrCat("run_id=", internal::EncodePath(run_id),
                                     "&metric_key=", internal::EncodePath(key), "&max_results=25000");
    if (!page_token.empty()) absl::StrAppend(&query, "&page_token=", internal::EncodePath(page_token));
    ASSIGN_OR_RETURN(std::string body, Get("metrics/get-history", query));
    ASSIGN_OR_RETURN(json r, ParseJson(body, "metrics/get-history"));
    for (const json& m : r.value("metrics", json::array())) out.push_back(ParseMetric(m));
    page_token = StringField(r, "next_page_token");
    if (page_token.empty()) break;
  }
  return out;
}

absl::StatusOr<std::string> RestTrackingClient::ArtifactPathFor(absl::string_view run_id,
                                                                absl::string_view path) {
  RETURN_IF_ERROR(ValidateArtifactPath(path));
  std::string root;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = artifact_root_.find(run_id); it != artifact_root_.end()) root = it->second;
  }
  if (root.empty()) {
    ASSIGN_OR_RETURN(Run run, GetRun(run_id));
    absl::string_view uri = run.info.artifact_uri;
    if (!absl::ConsumePrefix(&uri, "mlflow-artifacts:")) {
      return absl::FailedPreconditionError(absl::StrCat(
          "run ", run_id, " stores artifacts at \"", run.info.artifact_uri,
          "\", which the tracking server's artifact proxy does not serve (start it with --serve-artifacts "
          "and the default artifact root)"));
    }
    if (absl::ConsumePrefix(&uri, "//")) {  // mlflow-artifacts://host:port/path
      size_t slash = uri.find('/');
      uri = slash == absl::string_view::npos ? absl::string_view() : uri.substr(slash);
    }
    root = std::string(absl::StripSuffix(uri, "/"));
    if (!absl::StartsWith(root, "/")) root = absl::StrCat("/", root);
    absl::MutexLock lock(&mu_);
    artifact_root_[std::string(run_id)] = root;
  }
  return absl::StrCat("/api/2.0/mlflow-artifacts/artifacts", internal::EncodePath(root), "/",
                      internal::EncodePath(path));
}

absl::Status RestTrackingClient::UploadArtifact(absl::string_view run_id, absl::string_view path,
                                                absl::string_view content) {
  ASSIGN_OR_RETURN(std::string url_path, ArtifactPathFor(run_id, path));
  return Call("PUT", url_path, std::string(content), "application/octet-stream").status();
}

absl::StatusOr<std::string> RestTrackingClient::DownloadArtifact(absl::string_view run_id,
                                                                 absl::string_view path) {
  ASSIGN_OR_RETURN(std::string url_path, ArtifactPathFor(run_id, path));
  return Call("GET", url_path, "", nullptr);
}

}  // namespace coach::mlflow
