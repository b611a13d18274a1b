#include "integrations/mlflow/rest_tracking_client.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/http/curl_transport.h"
#include "common/http/retry.h"
#include "common/http/url.h"
#include "common/status_macros.h"
#include "integrations/mlflow/log_batch.h"
#include "integrations/mlflow/rest_errors.h"
#include "integrations/mlflow/rest_json.h"
#include "integrations/mlflow/rest_retry.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow {

using json = nlohmann::json;
using internal::Int64Field;
using internal::ParseJson;
using internal::ParseMetric;
using internal::ParseRun;
using internal::ParseRunInfo;
using internal::StringField;
using internal::TagsJson;

namespace {

bool IsFile(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

http::CurlTransportOptions TransportOptions(const RestTrackingOptions& o) {
  http::CurlTransportOptions t;
  t.tls.insecure_skip_verify = o.insecure_tls;
  t.tls.ca_file = o.server_cert_path;
  t.tls.client_cert_file = o.client_cert_path;
  t.tls.client_key_file = o.client_cert_path;  // one PEM holds both
  t.connect_timeout = o.connect_timeout;
  t.max_body_bytes = o.max_answer_bytes;
  t.user_agent = "coach-mlflow/1";
  return t;
}

// A failure without an answer as a status, and whether a retry may help.
absl::Status TransportStatus(const http::Result& r, absl::string_view what, bool* retryable) {
  const std::string text = absl::StrCat("MLflow ", what, ": ", r.error);
  *retryable = false;
  switch (r.failure) {
    case http::Failure::kTimeout:
      *retryable = true;
      return absl::DeadlineExceededError(text);
    case http::Failure::kCouldNotConnect:
    case http::Failure::kConnectionBroken:
      *retryable = true;
      return absl::UnavailableError(text);
    case http::Failure::kBadUrl:
      return absl::InvalidArgumentError(text);
    default:
      // Certificate problems and the like: retrying will not fix them.
      return absl::FailedPreconditionError(text);
  }
}

}  // namespace

RestTrackingClient::RestTrackingClient(RestTrackingOptions options,
                                       std::unique_ptr<http::Transport> transport)
    : options_(std::move(options)), transport_(std::move(transport)) {
  base_ = std::string(absl::StripSuffix(options_.tracking_uri, "/"));
  redacted_uri_ = internal::RedactUri(base_);
}

absl::StatusOr<std::unique_ptr<RestTrackingClient>> RestTrackingClient::Create(
    RestTrackingOptions options) {
  const std::string& uri = options.tracking_uri;
  if (!absl::StartsWith(uri, "http://") && !absl::StartsWith(uri, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("tracking URI \"", internal::RedactUri(uri),
                     "\": only http:// and https:// servers are supported"));
  }
  if (options.retry.max_attempts < 1)
    return absl::InvalidArgumentError("retry.max_attempts must be >= 1");
  for (const std::string* path : {&options.server_cert_path, &options.client_cert_path}) {
    if (!path->empty() && !IsFile(*path)) {
      return absl::InvalidArgumentError(
          absl::StrCat("certificate file ", *path, " is not readable"));
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<http::CurlTransport> transport,
                   http::CurlTransport::Create(TransportOptions(options)));
  return std::unique_ptr<RestTrackingClient>(
      new RestTrackingClient(std::move(options), std::move(transport)));
}

absl::StatusOr<std::unique_ptr<RestTrackingClient>> RestTrackingClient::FromEnv() {
  ASSIGN_OR_RETURN(RestTrackingOptions options, RestTrackingOptions::FromEnv());
  return Create(std::move(options));
}

absl::StatusOr<std::string> RestTrackingClient::Call(const char* method, const std::string& path,
                                                     const std::string& body,
                                                     const char* content_type) {
  const std::string what = absl::StrCat(method, " ", path.substr(0, path.find('?')));
  http::Request request;
  request.method = method;
  request.url = base_ + path;
  request.body = body;
  request.timeout = options_.request_timeout;
  if (!options_.username.empty()) {
    // What libcurl's CURLAUTH_BASIC sends, preemptively.
    request.headers.emplace_back(
        "Authorization", absl::StrCat("Basic ", absl::Base64Escape(absl::StrCat(
                                                    options_.username, ":", options_.password))));
  } else if (!options_.token.empty()) {
    request.headers.emplace_back("Authorization", absl::StrCat("Bearer ", options_.token));
  }
  if (content_type != nullptr) request.headers.emplace_back("Content-Type", content_type);
  absl::StatusOr<std::string> out;
  for (int attempt = 1;; ++attempt) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    http::Result r = transport_->Send(request);
    bool retryable = false;
    std::optional<absl::Duration> retry_after;
    if (!r.answered()) {
      out = TransportStatus(r, what, &retryable);
    } else if (r.success() &&
               (r.response.body_cut || r.response.body.size() > options_.max_answer_bytes)) {
      out = absl::ResourceExhaustedError(absl::StrCat(
          "MLflow ", what, ": the answer is longer than ", options_.max_answer_bytes, " bytes"));
      break;
    } else if (r.success()) {
      out = std::move(r.response.body);
      break;
    } else if (r.response.status == 500 && std::string_view(method) == "GET" &&
               absl::StrContains(path, "/mlflow-artifacts/") &&
               absl::StrContains(r.response.body, "No such file or directory")) {
      // The artifact proxy answers a missing file with a 500.
      out = absl::NotFoundError(absl::StrCat("MLflow ", what, ": no such artifact"));
      break;
    } else {
      out = internal::MapHttpError(r.response.status, r.response.body, what);
      retryable = internal::IsRetryableHttpStatus(r.response.status);
      if (auto header = r.response.Header("Retry-After"); header.has_value()) {
        retry_after = http::ParseRetryAfter(*header, options_.clock->Now());
      }
    }
    if (!retryable || attempt >= options_.retry.max_attempts) break;
    retries_.fetch_add(1, std::memory_order_relaxed);
    absl::Duration wait =
        internal::BackoffDelay(options_.retry, attempt, retry_after, http::UnitRandom());
    std::this_thread::sleep_for(absl::ToChronoNanoseconds(wait));
  }
  // Do not leave secrets behind in our copies.
  for (auto& [name, value] : request.headers) std::fill(value.begin(), value.end(), '\0');
  return out;
}

absl::StatusOr<std::string> RestTrackingClient::Post(const std::string& api,
                                                     const std::string& body) {
  return Call("POST", absl::StrCat("/api/2.0/mlflow/", api), body, "application/json");
}

absl::StatusOr<std::string> RestTrackingClient::Get(const std::string& api,
                                                    const std::string& query) {
  return Call("GET", absl::StrCat("/api/2.0/mlflow/", api, query.empty() ? "" : "?", query), "",
              nullptr);
}

// ---------------------------------------------------------------------------------------------
// Operations

absl::StatusOr<Experiment> RestTrackingClient::GetExperimentByName(absl::string_view name) {
  ASSIGN_OR_RETURN(
      std::string body,
      Get("experiments/get-by-name",
          absl::StrCat("experiment_name=",
                       http::PercentEncodePath(name) /* '/' kept: legal in queries */)));
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
      return absl::FailedPreconditionError(
          absl::StrCat("MLflow experiment \"", name, "\" (", e.experiment_id,
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
  json j = {
      {"experiment_id", request.experiment_id},
      {"start_time", request.start_time_ms.value_or(absl::ToUnixMillis(options_.clock->Now()))},
      {"tags", TagsJson(request.tags)}};
  if (!request.run_name.empty()) j["run_name"] = request.run_name;
  ASSIGN_OR_RETURN(std::string body, Post("runs/create", j.dump()));
  ASSIGN_OR_RETURN(json r, ParseJson(body, "runs/create"));
  return ParseRun(r.value("run", json::object())).info;
}

absl::StatusOr<Run> RestTrackingClient::GetRun(absl::string_view run_id) {
  ASSIGN_OR_RETURN(std::string body,
                   Get("runs/get", absl::StrCat("run_id=", http::PercentEncodePath(run_id))));
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

absl::StatusOr<std::vector<RunInfo>> RestTrackingClient::SearchRuns(
    const SearchRunsRequest& request) {
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

absl::StatusOr<std::vector<std::string>> RestTrackingClient::ListExperimentIds(int max_results) {
  std::vector<std::string> out;
  std::string page_token;
  while (static_cast<int>(out.size()) < max_results) {
    json j = {{"max_results", std::min(1000, max_results - static_cast<int>(out.size()))},
              {"order_by", json::array({"last_update_time DESC"})}};
    if (!page_token.empty()) j["page_token"] = page_token;
    ASSIGN_OR_RETURN(std::string body, Post("experiments/search", j.dump()));
    ASSIGN_OR_RETURN(json r, ParseJson(body, "experiments/search"));
    for (const json& e : r.value("experiments", json::array())) {
      if (std::string id = StringField(e, "experiment_id"); !id.empty()) out.push_back(id);
    }
    page_token = StringField(r, "next_page_token");
    if (page_token.empty()) break;
  }
  return out;
}

absl::Status RestTrackingClient::LogBatch(absl::string_view run_id,
                                          const std::vector<Metric>& metrics,
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
    std::string query =
        absl::StrCat("run_id=", http::PercentEncodePath(run_id),
                     "&metric_key=", http::PercentEncodePath(key), "&max_results=25000");
    if (!page_token.empty())
      absl::StrAppend(&query, "&page_token=", http::PercentEncodePath(page_token));
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
      return absl::FailedPreconditionError(
          absl::StrCat("run ", run_id, " stores artifacts at \"", run.info.artifact_uri,
                       "\", which the tracking server's artifact proxy does not serve (start it "
                       "with --serve-artifacts "
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
  return absl::StrCat("/api/2.0/mlflow-artifacts/artifacts", http::PercentEncodePath(root), "/",
                      http::PercentEncodePath(path));
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

absl::StatusOr<std::vector<FileInfo>> RestTrackingClient::ListArtifacts(absl::string_view run_id,
                                                                        absl::string_view path,
                                                                        int max_results) {
  if (!path.empty()) RETURN_IF_ERROR(ValidateArtifactPath(path));
  std::vector<FileInfo> out;
  std::string page_token;
  while (static_cast<int>(out.size()) < max_results) {
    std::string query = absl::StrCat("run_id=", http::PercentEncodePath(run_id),
                                     "&path=", http::PercentEncodePath(path));
    if (!page_token.empty())
      absl::StrAppend(&query, "&page_token=", http::PercentEncodePath(page_token));
    ASSIGN_OR_RETURN(std::string body, Get("artifacts/list", query));
    ASSIGN_OR_RETURN(json r, ParseJson(body, "artifacts/list"));
    for (const json& f : r.value("files", json::array())) {
      if (!f.is_object() || static_cast<int>(out.size()) >= max_results) continue;
      FileInfo info;
      info.path = StringField(f, "path");
      info.is_dir = f.value("is_dir", false);
      const json& size = f.value("file_size", json());
      if (size.is_number_integer()) info.file_size = size.get<int64_t>();
      if (size.is_string()) (void)absl::SimpleAtoi(size.get<std::string>(), &info.file_size);
      out.push_back(std::move(info));
    }
    page_token = StringField(r, "next_page_token");
    if (page_token.empty()) break;
  }
  std::sort(out.begin(), out.end(),
            [](const FileInfo& a, const FileInfo& b) { return a.path < b.path; });
  return out;
}

}  // namespace coach::mlflow
