// MlflowTracker's part of the job history (docs/history.md): a deleted job's record kept in its
// run, and the records and logs found again by listing and searching the tracking servers.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "operator/history/history_record.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/tracking/mlflow_sync_context.h"
#include "operator/tracking/mlflow_tracker.h"

namespace coach::tracking {
namespace {

// Bounds of one listing: experiments searched per server, experiments per search request, runs'
// kept logs listed.
constexpr int kMaxSearchedExperiments = 1000;
constexpr size_t kExperimentsPerSearch = 100;
constexpr int kMaxListedLogs = 5000;

// The run's kept logs, "attempt-<n>/<replica>" in order (logs/attempt-<n>/<replica>.log).
absl::StatusOr<std::vector<std::string>> KeptLogNames(mlflow::TrackingClient& client,
                                                      const std::string& run_id) {
  std::vector<std::string> names;
  ASSIGN_OR_RETURN(std::vector<mlflow::FileInfo> attempts,
                   client.ListArtifacts(run_id, "logs", kMaxListedLogs));
  for (const mlflow::FileInfo& dir : attempts) {
    absl::string_view attempt = dir.path;
    if (!dir.is_dir || !absl::ConsumePrefix(&attempt, "logs/") ||
        !absl::StartsWith(attempt, "attempt-")) {
      continue;
    }
    const int room = kMaxListedLogs - static_cast<int>(names.size());
    if (room <= 0) break;
    ASSIGN_OR_RETURN(std::vector<mlflow::FileInfo> files,
                     client.ListArtifacts(run_id, dir.path, room));
    for (const mlflow::FileInfo& file : files) {
      absl::string_view name = file.path;
      if (file.is_dir || !absl::ConsumePrefix(&name, dir.path) ||
          !absl::ConsumePrefix(&name, "/") || !absl::ConsumeSuffix(&name, ".log")) {
        continue;
      }
      names.push_back(absl::StrCat(attempt, "/", name));
    }
  }
  return names;
}

// The filter of the runs that keep deleted jobs' records; the values are checked names, which
// hold no quote.
std::string DeletedFilter(const std::string& ns, const std::string& name, const std::string& uid) {
  std::string filter = absl::StrCat("tags.`", kDeletedTag, "` = 'true'");
  if (!ns.empty()) absl::StrAppend(&filter, " AND tags.`coach.namespace` = '", ns, "'");
  if (!name.empty()) absl::StrAppend(&filter, " AND tags.`coach.job_name` = '", name, "'");
  if (!uid.empty()) absl::StrAppend(&filter, " AND tags.`coach.job_uid` = '", uid, "'");
  return filter;
}

// Whether a record read from a run is the one asked for: a run's artifacts are its training
// code's to write too, so what it says is checked against the question.
bool Matches(const api::v1::JobHistory& record, const std::string& ns, const std::string& name,
             const std::string& uid) {
  const auto& meta = record.job().metadata();
  return (ns.empty() || meta.namespace_() == ns) && (name.empty() || meta.name() == name) &&
         (uid.empty() || meta.uid() == uid) && record.has_deleted_time();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> MlflowTracker::ReplicasOf(const model::Job& job,
                                                                   int attempt) {
  std::optional<reconcile::MlflowTarget> target = reconcile::MlflowTargetFor(job, options_.mlflow);
  if (!target.has_value() || target->run_id.empty()) {
    return absl::NotFoundError(absl::StrCat(JobKey(job), " has no MLflow run"));
  }
  ASSIGN_OR_RETURN(mlflow::TrackingClient * client, ClientFor(target->tracking_uri));
  const std::string dir = absl::StrCat("logs/attempt-", attempt);
  ASSIGN_OR_RETURN(std::vector<mlflow::FileInfo> files,
                   client->ListArtifacts(target->run_id, dir, kMaxListedLogs));
  std::vector<std::string> replicas;
  for (const mlflow::FileInfo& file : files) {
    absl::string_view name = file.path;
    if (!file.is_dir && absl::ConsumePrefix(&name, dir + "/") &&
        absl::ConsumeSuffix(&name, ".log")) {
      replicas.emplace_back(name);
    }
  }
  return replicas;
}

void MlflowTracker::KeepRecord(api::v1::JobHistory record, bool read_logs) {
  const model::Job& job = record.job();
  const std::string uid = job.metadata().uid();
  std::optional<reconcile::MlflowTarget> target = reconcile::MlflowTargetFor(job, options_.mlflow);
  if (uid.empty() || !target.has_value()) return;
  {
    absl::MutexLock lock(&mu_);
    done_.erase(uid);  // nothing more will be seen of it
    auto it = jobs_.find(uid);
    if (it == jobs_.end()) {
      // Its run ended before (or tracking was given up): the run named on the job keeps it.
      if (target->run_id.empty()) return;
      if (jobs_.size() >= options_.max_jobs) {
        ++stats_.dropped_jobs;
        if (dropped_ != nullptr) dropped_->Add({});
        spdlog::warn("mlflow: record of deleted job {} not kept: {} jobs are tracked already",
                     JobKey(job), jobs_.size());
        return;
      }
      it = jobs_.emplace(uid, Tracked{}).first;
      it->second.job = job;
      it->second.deleted = true;
    }
    Tracked& t = it->second;
    if (!t.deleted) {
      t.job = job;
      t.deleted = true;
      t.read_logs_when_deleted = read_logs;
    }
    t.record = std::move(record);
    ++t.seen;
  }
  queue_.Add(uid);
}

absl::Status MlflowTracker::RecordDeletion(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (!ctx.entry.record.has_value() || p.deletion_recorded || !p.terminated) {
    return absl::OkStatus();
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(ctx.uid);
    // Logs handed over since this sync began: the record lists them, on the sync they queued.
    if (it != jobs_.end() && !it->second.attempt_logs.empty()) return absl::OkStatus();
  }
  api::v1::JobHistory record = *ctx.entry.record;
  record.clear_logs();
  *ctx.op = "list_kept_logs";
  absl::StatusOr<std::vector<std::string>> logs = KeptLogNames(*ctx.client, p.run_id);
  if (logs.ok()) {
    for (const std::string& log : *logs) record.add_logs(log);
  } else if (mlflow::IsTransient(logs.status())) {
    return logs.status();
  } else {
    spdlog::warn("mlflow: kept logs of {} not listed: {}", ctx.key, logs.status().ToString());
  }
  *ctx.op = "record_deletion";
  absl::StatusOr<std::string> json = history::RecordJson(record);
  absl::Status kept =
      json.ok() ? ctx.client->UploadArtifact(p.run_id, kRecordArtifact, *json) : json.status();
  if (!kept.ok() && !mlflow::IsTransient(kept)) {
    // Too large, or the server serves no artifacts: trying again changes nothing.
    CountError("record_deletion", kept);
    spdlog::warn("mlflow: record of deleted job {} not kept in run {}: {}", ctx.key, p.run_id,
                 kept.ToString());
    p.deletion_recorded = true;
    Save(ctx);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(kept);
  // Tagged after the record is there: a run found by its tags has one.
  const std::string when = absl::FormatTime(
      "%Y-%m-%dT%H:%M:%SZ", reconcile::FromTimestamp(record.deleted_time()), absl::UTCTimeZone());
  RETURN_IF_ERROR(ctx.client->LogBatch(
      p.run_id, {}, {},
      {{kDeletedTag, "true"}, {kDeletedByTag, record.deleted_by()}, {kDeletedTimeTag, when}}));
  p.deletion_recorded = true;
  Save(ctx);
  spdlog::info("mlflow: deleted job {}: record and {} kept log(s) in run {}", ctx.key,
               record.logs_size(), p.run_id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MlflowTracker::FoundRun>> MlflowTracker::FindRecordRuns(
    const std::string& filter, int max) {
  std::set<std::string> uris;
  if (!options_.mlflow.tracking_uri.empty()) uris.insert(options_.mlflow.tracking_uri);
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [uri, client] : clients_) uris.insert(uri);
  }
  if (uris.empty()) {
    return absl::FailedPreconditionError(
        "this operator keeps no history of deleted jobs: it has no history store "
        "(--history-s3-endpoint) and knows no MLflow tracking server (docs/history.md)");
  }
  std::vector<FoundRun> found;
  for (const std::string& uri : uris) {
    ASSIGN_OR_RETURN(mlflow::TrackingClient * client, ClientFor(uri));
    ASSIGN_OR_RETURN(std::vector<std::string> experiments,
                     client->ListExperimentIds(kMaxSearchedExperiments));
    for (size_t i = 0; i < experiments.size() && static_cast<int>(found.size()) < max;
         i += kExperimentsPerSearch) {
      mlflow::SearchRunsRequest search;
      search.experiment_ids.assign(
          experiments.begin() + i,
          experiments.begin() + std::min(experiments.size(), i + kExperimentsPerSearch));
      search.filter = filter;
      search.max_results = max - static_cast<int>(found.size());
      ASSIGN_OR_RETURN(std::vector<mlflow::RunInfo> runs, client->SearchRuns(search));
      for (mlflow::RunInfo& run : runs) found.push_back({client, std::move(run.run_id)});
    }
  }
  return found;
}

absl::StatusOr<api::v1::JobHistory> MlflowTracker::ReadRecord(const FoundRun& run) {
  ASSIGN_OR_RETURN(std::string json, run.client->DownloadArtifact(run.run_id, kRecordArtifact));
  if (json.size() > history::kMaxRecordBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("run ", run.run_id, ": ", kRecordArtifact,
                                                     " is larger than ", history::kMaxRecordBytes,
                                                     " bytes"));
  }
  return history::ParseRecordJson(absl::StrCat("run ", run.run_id), json);
}

absl::StatusOr<std::vector<api::v1::JobHistory>> MlflowTracker::ListDeleted(const std::string& ns,
                                                                            const std::string& name,
                                                                            int max,
                                                                            bool* truncated) {
  if (!ns.empty()) RETURN_IF_ERROR(history::CheckKubeName("namespace", ns));
  if (!name.empty()) RETURN_IF_ERROR(history::CheckKubeName("name", name));
  max = std::max(max, 0);
  ASSIGN_OR_RETURN(std::vector<FoundRun> runs,
                   FindRecordRuns(DeletedFilter(ns, name, ""), max + 1));
  std::vector<api::v1::JobHistory> out;
  for (const FoundRun& run : runs) {
    absl::StatusOr<api::v1::JobHistory> record = ReadRecord(run);
    if (record.ok() && Matches(*record, ns, name, "")) {
      out.push_back(std::move(record).value());
    } else if (!record.ok() && !absl::IsNotFound(record.status())) {
      spdlog::warn("mlflow: a deleted job's record not read: {}", record.status().ToString());
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const api::v1::JobHistory& a, const api::v1::JobHistory& b) {
                     return reconcile::FromTimestamp(a.deleted_time()) >
                            reconcile::FromTimestamp(b.deleted_time());
                   });
  *truncated = static_cast<int>(runs.size()) > max;
  if (static_cast<int>(out.size()) > max) out.resize(max);
  return out;
}

absl::StatusOr<api::v1::JobHistory> MlflowTracker::DeletedRecord(const std::string& ns,
                                                                 const std::string& name,
                                                                 const std::string& uid) {
  RETURN_IF_ERROR(history::CheckKubeName("namespace", ns));
  if (!name.empty()) RETURN_IF_ERROR(history::CheckKubeName("name", name));
  RETURN_IF_ERROR(history::CheckSegment("uid", uid));
  ASSIGN_OR_RETURN(std::vector<FoundRun> runs, FindRecordRuns(DeletedFilter(ns, name, uid), 10));
  for (const FoundRun& run : runs) {
    absl::StatusOr<api::v1::JobHistory> record = ReadRecord(run);
    if (record.ok() && Matches(*record, ns, name, uid)) return record;
  }
  return absl::NotFoundError(absl::StrCat("no record of a deleted job ", ns, "/", name, " uid ",
                                          uid, " is kept in MLflow"));
}

}  // namespace coach::tracking
