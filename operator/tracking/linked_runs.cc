#include "operator/tracking/linked_runs.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace coach::tracking {
namespace {

using Json = nlohmann::json;

std::string StringField(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string RunUrl(const std::string& tracking_uri, const std::string& experiment_id,
                   const std::string& run_id) {
  std::string base = tracking_uri;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return absl::StrCat(base, "/#/experiments/", experiment_id, "/runs/", run_id);
}

absl::StatusOr<std::vector<LinkedRun>> FindLinkedRuns(mlflow::TrackingClient& client,
                                                      const std::string& job_run_id,
                                                      const std::string& uid,
                                                      const std::string& job_experiment_id) {
  ASSIGN_OR_RETURN(mlflow::Run job_run, client.GetRun(job_run_id));
  std::vector<LinkedRun> runs;
  std::set<std::string> seen = {job_run_id};
  std::set<std::string> experiments = {job_experiment_id};
  for (const auto& [key, value] : job_run.tags) {
    if (!absl::StartsWith(key, kLinkedRunTagPrefix)) continue;
    LinkedRun run;
    run.run_id = key.substr(sizeof(kLinkedRunTagPrefix) - 1);
    if (run.run_id.empty() || !seen.insert(run.run_id).second) continue;
    // Written by training code: anything malformed is skipped, never trusted further.
    Json j = Json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    run.experiment_id = StringField(j, "experiment_id");
    run.tracking_uri = StringField(j, "tracking_uri");
    run.replica = StringField(j, "replica");
    run.rank = StringField(j, "rank");
    run.tagged = true;
    if (run.tracking_uri.empty() && !run.experiment_id.empty() &&
        experiments.size() < kMaxSearchedExperiments) {
      experiments.insert(run.experiment_id);
    }
    runs.push_back(std::move(run));
  }
  // The code may name any experiment (set_experiment): the most recently updated ones are
  // searched too, a bounded number, a batch of experiments a request.
  ASSIGN_OR_RETURN(std::vector<std::string> recent,
                   client.ListExperimentIds(kMaxSearchedExperiments));
  for (std::string& id : recent) {
    if (experiments.size() >= kMaxSearchedExperiments) break;
    experiments.insert(std::move(id));
  }
  std::vector<mlflow::RunInfo> found;
  const std::vector<std::string> ids(experiments.begin(), experiments.end());
  for (size_t i = 0; i < ids.size() && found.size() <= kMaxLinkedRuns; i += kExperimentsPerSearch) {
    mlflow::SearchRunsRequest search;
    search.experiment_ids.assign(ids.begin() + i,
                                 ids.begin() + std::min(ids.size(), i + kExperimentsPerSearch));
    search.filter = absl::StrCat("tags.`coach.job_uid` = '", uid, "'");
    search.max_results = static_cast<int>(kMaxLinkedRuns) + 1;
    ASSIGN_OR_RETURN(std::vector<mlflow::RunInfo> batch, client.SearchRuns(search));
    found.insert(found.end(), batch.begin(), batch.end());
  }
  for (const mlflow::RunInfo& info : found) {
    if (!seen.insert(info.run_id).second) continue;
    LinkedRun run;
    run.run_id = info.run_id;
    run.experiment_id = info.experiment_id;
    runs.push_back(std::move(run));
  }
  // Replica and rank of the runs the search found, from their own tags.
  for (LinkedRun& run : runs) {
    if (run.tagged || !run.replica.empty()) continue;
    absl::StatusOr<mlflow::Run> got = client.GetRun(run.run_id);
    if (!got.ok()) continue;
    if (auto it = got->tags.find("coach.replica"); it != got->tags.end()) run.replica = it->second;
    if (auto it = got->tags.find("coach.rank"); it != got->tags.end()) run.rank = it->second;
  }
  std::sort(runs.begin(), runs.end(), [](const LinkedRun& a, const LinkedRun& b) {
    return std::tie(a.replica, a.rank, a.run_id) < std::tie(b.replica, b.rank, b.run_id);
  });
  if (runs.size() > kMaxLinkedRuns) runs.resize(kMaxLinkedRuns);
  return runs;
}

std::vector<mlflow::Tag> LinkTags(const std::vector<LinkedRun>& runs) {
  std::vector<mlflow::Tag> tags;
  for (const LinkedRun& run : runs) {
    if (run.tagged) continue;
    Json value = {{"experiment_id", run.experiment_id}};
    if (!run.replica.empty()) value["replica"] = run.replica;
    if (!run.rank.empty()) value["rank"] = run.rank;
    tags.push_back({absl::StrCat(kLinkedRunTagPrefix, run.run_id), value.dump()});
  }
  return tags;
}

std::string RunsAnnotation(const std::string& tracking_uri, const std::string& job_experiment_id,
                           const std::string& job_run_id, const std::vector<LinkedRun>& runs) {
  Json list = Json::array();
  list.push_back({{"replica", "job"},
                  {"run_id", job_run_id},
                  {"url", RunUrl(tracking_uri, job_experiment_id, job_run_id)}});
  for (const LinkedRun& run : runs) {
    std::string who = run.replica.empty() ? "code" : run.replica;
    if (!run.rank.empty()) absl::StrAppend(&who, " rank ", run.rank);
    list.push_back({{"replica", who},
                    {"run_id", run.run_id},
                    {"url", RunUrl(run.tracking_uri.empty() ? tracking_uri : run.tracking_uri,
                                   run.experiment_id, run.run_id)}});
  }
  return list.dump();
}

}  // namespace coach::tracking
