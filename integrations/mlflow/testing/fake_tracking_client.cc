#include "integrations/mlflow/testing/fake_tracking_client.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace coach::mlflow::testing {

void FakeTrackingClient::InjectError(Method method, absl::Status status, int times) {
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < times; ++i) injected_[method].push_back(status);
}

void FakeTrackingClient::SetDown(bool down) {
  absl::MutexLock lock(&mu_);
  down_ = down;
}

void FakeTrackingClient::SetLatency(absl::Duration latency) {
  absl::MutexLock lock(&mu_);
  latency_ = latency;
}

int FakeTrackingClient::Calls(Method method) const {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(method);
  return it == calls_.end() ? 0 : it->second;
}

int64_t FakeTrackingClient::MetricsReceived() const {
  absl::MutexLock lock(&mu_);
  return metrics_received_;
}

absl::Status FakeTrackingClient::Enter(Method method) {
  absl::Duration latency;
  {
    absl::MutexLock lock(&mu_);
    ++calls_[method];
    latency = latency_;
  }
  if (latency > absl::ZeroDuration()) absl::SleepFor(latency);
  absl::MutexLock lock(&mu_);
  if (down_) return absl::UnavailableError("fake MLflow: connection refused");
  auto& queue = injected_[method];
  if (!queue.empty()) {
    absl::Status s = queue.front();
    queue.pop_front();
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<Experiment> FakeTrackingClient::GetExperimentByName(absl::string_view name) {
  RETURN_IF_ERROR(Enter(Method::kGetExperimentByName));
  absl::MutexLock lock(&mu_);
  for (const Experiment& e : experiments_) {
    if (e.name == name) return e;
  }
  return absl::NotFoundError(absl::StrCat("fake MLflow: no experiment named ", name));
}

absl::StatusOr<std::string> FakeTrackingClient::GetOrCreateExperiment(absl::string_view name) {
  RETURN_IF_ERROR(Enter(Method::kGetOrCreateExperiment));
  if (name.empty()) return absl::InvalidArgumentError("experiment name is empty");
  absl::MutexLock lock(&mu_);
  for (const Experiment& e : experiments_) {
    if (e.name == name) {
      if (e.lifecycle_stage == "deleted") {
        return absl::FailedPreconditionError(absl::StrCat("experiment ", name, " is deleted"));
      }
      return e.experiment_id;
    }
  }
  Experiment e;
  e.experiment_id = absl::StrCat(experiments_.size() + 1);
  e.name = std::string(name);
  e.artifact_location = absl::StrCat("mlflow-artifacts:/", e.experiment_id);
  e.lifecycle_stage = "active";
  experiments_.push_back(e);
  return e.experiment_id;
}

absl::StatusOr<RunInfo> FakeTrackingClient::CreateRun(const CreateRunRequest& request) {
  RETURN_IF_ERROR(Enter(Method::kCreateRun));
  for (const Tag& t : request.tags) RETURN_IF_ERROR(ValidateKey(t.key));
  absl::MutexLock lock(&mu_);
  bool found = std::any_of(experiments_.begin(), experiments_.end(), [&](const Experiment& e) {
    return e.experiment_id == request.experiment_id;
  });
  if (!found)
    return absl::NotFoundError(absl::StrCat("fake MLflow: no experiment ", request.experiment_id));
  StoredRun stored;
  RunInfo& info = stored.run.info;
  info.run_id = absl::StrCat("fakerun", next_run_++);
  info.experiment_id = request.experiment_id;
  info.run_name = request.run_name.empty() ? info.run_id : request.run_name;
  info.start_time_ms = request.start_time_ms.value_or(absl::ToUnixMillis(absl::Now()));
  info.artifact_uri =
      absl::StrCat("mlflow-artifacts:/", info.experiment_id, "/", info.run_id, "/artifacts");
  info.lifecycle_stage = "active";
  for (const Tag& t : request.tags) stored.run.tags[t.key] = t.value;
  stored.run.tags["mlflow.runName"] = info.run_name;
  RunInfo out = info;
  runs_[info.run_id] = std::move(stored);
  return out;
}

absl::StatusOr<Run> FakeTrackingClient::GetRun(absl::string_view run_id) {
  RETURN_IF_ERROR(Enter(Method::kGetRun));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(std::string(run_id));
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", run_id));
  return it->second.run;
}

absl::StatusOr<RunInfo> FakeTrackingClient::UpdateRun(const UpdateRunRequest& request) {
  RETURN_IF_ERROR(Enter(Method::kUpdateRun));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(request.run_id);
  if (it == runs_.end())
    return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", request.run_id));
  RunInfo& info = it->second.run.info;
  if (request.status) info.status = *request.status;
  if (request.end_time_ms) info.end_time_ms = *request.end_time_ms;
  if (request.run_name) {
    info.run_name = *request.run_name;
    it->second.run.tags["mlflow.runName"] = *request.run_name;
  }
  return info;
}

absl::StatusOr<std::vector<std::string>> FakeTrackingClient::ListExperimentIds(int max_results) {
  RETURN_IF_ERROR(Enter(Method::kListExperimentIds));
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  // Newest first, as a server orders them by last update.
  for (auto it = experiments_.rbegin(); it != experiments_.rend(); ++it) {
    if (static_cast<int>(out.size()) >= max_results) break;
    if (it->lifecycle_stage == "active") out.push_back(it->experiment_id);
  }
  return out;
}

absl::StatusOr<std::vector<RunInfo>> FakeTrackingClient::SearchRuns(
    const SearchRunsRequest& request) {
  RETURN_IF_ERROR(Enter(Method::kSearchRuns));
  // The fake understands tag equalities joined by AND: tags.`key` = 'value' (or tags.key =
  // 'value'); empty: all.
  std::map<std::string, std::string> wanted;
  for (absl::string_view f : absl::StrSplit(request.filter, " AND ", absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&f, "tags."))
      return absl::InvalidArgumentError("fake: unsupported filter");
    size_t eq = f.find(" = ");
    if (eq == absl::string_view::npos)
      return absl::InvalidArgumentError("fake: unsupported filter");
    std::string tag_key = std::string(f.substr(0, eq));
    if (tag_key.size() >= 2 && tag_key.front() == '`')
      tag_key = tag_key.substr(1, tag_key.size() - 2);
    absl::string_view v = f.substr(eq + 3);
    if (v.size() < 2) return absl::InvalidArgumentError("fake: unsupported filter");
    wanted[tag_key] = std::string(v.substr(1, v.size() - 2));
  }
  std::set<std::string> ids(request.experiment_ids.begin(), request.experiment_ids.end());
  absl::MutexLock lock(&mu_);
  std::vector<RunInfo> out;
  for (const auto& [id, stored] : runs_) {
    if (!ids.count(stored.run.info.experiment_id)) continue;
    bool matches = true;
    for (const auto& [key, value] : wanted) {
      auto t = stored.run.tags.find(key);
      matches = matches && t != stored.run.tags.end() && t->second == value;
    }
    if (matches) out.push_back(stored.run.info);
  }
  std::sort(out.begin(), out.end(),
            [](const RunInfo& a, const RunInfo& b) { return a.start_time_ms > b.start_time_ms; });
  if (static_cast<int>(out.size()) > request.max_results) out.resize(request.max_results);
  return out;
}

absl::Status FakeTrackingClient::LogBatch(absl::string_view run_id,
                                          const std::vector<Metric>& metrics,
                                          const std::vector<Param>& params,
                                          const std::vector<Tag>& tags) {
  RETURN_IF_ERROR(Enter(Method::kLogBatch));
  for (const Metric& m : metrics) RETURN_IF_ERROR(ValidateKey(m.key));
  for (const Tag& t : tags) RETURN_IF_ERROR(ValidateKey(t.key));
  std::map<std::string, std::string> batch_params;
  for (const Param& p : params) {
    RETURN_IF_ERROR(ValidateKey(p.key));
    auto [it, inserted] = batch_params.emplace(p.key, p.value);
    if (!inserted && it->second != p.value) {
      return absl::InvalidArgumentError(
          absl::StrCat("param ", p.key, " given twice with different values"));
    }
  }
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(std::string(run_id));
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", run_id));
  Run& run = it->second.run;
  for (const auto& [k, v] : batch_params) {
    auto existing = run.params.find(k);
    if (existing != run.params.end() && existing->second != v) {
      return absl::InvalidArgumentError(
          absl::StrCat("fake MLflow: changing param values is not allowed. Param with key='", k,
                       "' was already logged"));
    }
  }
  for (const auto& [k, v] : batch_params) run.params[k] = v;
  for (const Tag& t : tags) run.tags[t.key] = t.value;
  for (const Metric& m : metrics) {
    it->second.history[m.key].push_back(m);
    auto latest = std::find_if(run.latest_metrics.begin(), run.latest_metrics.end(),
                               [&](const Metric& x) { return x.key == m.key; });
    if (latest == run.latest_metrics.end()) {
      run.latest_metrics.push_back(m);
    } else if (std::make_pair(m.step, m.timestamp_ms) >=
               std::make_pair(latest->step, latest->timestamp_ms)) {
      *latest = m;
    }
  }
  metrics_received_ += static_cast<int64_t>(metrics.size());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Metric>> FakeTrackingClient::GetMetricHistory(absl::string_view run_id,
                                                                         absl::string_view key) {
  RETURN_IF_ERROR(Enter(Method::kGetMetricHistory));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(std::string(run_id));
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", run_id));
  auto h = it->second.history.find(std::string(key));
  if (h == it->second.history.end()) return std::vector<Metric>{};
  return h->second;
}

absl::Status FakeTrackingClient::UploadArtifact(absl::string_view run_id, absl::string_view path,
                                                absl::string_view content) {
  RETURN_IF_ERROR(Enter(Method::kUploadArtifact));
  RETURN_IF_ERROR(ValidateArtifactPath(path));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(std::string(run_id));
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", run_id));
  it->second.artifacts[std::string(path)] = std::string(content);
  return absl::OkStatus();
}

absl::StatusOr<std::string> FakeTrackingClient::DownloadArtifact(absl::string_view run_id,
                                                                 absl::string_view path) {
  RETURN_IF_ERROR(Enter(Method::kDownloadArtifact));
  RETURN_IF_ERROR(ValidateArtifactPath(path));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(std::string(run_id));
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", run_id));
  auto a = it->second.artifacts.find(std::string(path));
  if (a == it->second.artifacts.end())
    return absl::NotFoundError(absl::StrCat("fake MLflow: no artifact ", path));
  return a->second;
}

absl::StatusOr<std::vector<FileInfo>> FakeTrackingClient::ListArtifacts(absl::string_view run_id,
                                                                        absl::string_view path,
                                                                        int max_results) {
  RETURN_IF_ERROR(Enter(Method::kListArtifacts));
  if (!path.empty()) RETURN_IF_ERROR(ValidateArtifactPath(path));
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(std::string(run_id));
  if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("fake MLflow: no run ", run_id));
  const std::string prefix = path.empty() ? "" : absl::StrCat(path, "/");
  std::vector<FileInfo> out;
  for (const auto& [name, content] : it->second.artifacts) {
    if (!absl::StartsWith(name, prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t slash = rest.find('/');
    FileInfo info;
    info.path = prefix + rest.substr(0, slash);
    info.is_dir = slash != std::string::npos;
    info.file_size = info.is_dir ? 0 : static_cast<int64_t>(content.size());
    if (!out.empty() && out.back().path == info.path) continue;  // a directory's next file
    if (static_cast<int>(out.size()) >= max_results) break;
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace coach::mlflow::testing
