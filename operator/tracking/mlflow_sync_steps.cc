// MlflowTracker::Sync and its steps (mlflow_tracker.h), and what goes into the job's run.

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/history/mlflow_log_sink.h"
#include "operator/model/listen_ports.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/tracking/linked_runs.h"
#include "operator/tracking/mlflow_sync_context.h"
#include "operator/tracking/mlflow_tracker.h"
#include "operator/trainer/runtime_lookup.h"

namespace coach::tracking {
namespace {

using mlflow::Param;
using mlflow::RunStatus;
using mlflow::Tag;

int64_t ToMs(absl::Time t) { return absl::ToUnixMillis(t); }

std::string KindName(const model::Job& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return info == nullptr ? "Unknown" : std::string(info->name);
}

bool Terminal(RunStatus s) {
  return s == RunStatus::kFinished || s == RunStatus::kFailed || s == RunStatus::kKilled;
}

const char* const kStates[] = {"Succeeded", "Failed", "Suspended", "Restarting", "Running"};

}  // namespace

std::string JobKey(const model::Job& job) {
  return job.metadata().namespace_() + "/" + job.metadata().name();
}

bool ReplicasStarted(const model::JobStatus& status) {
  if (status.has_start_time()) return true;
  for (const char* s : {"Running", "Restarting", "Succeeded", "Failed"}) {
    if (reconcile::HasTrueCondition(status, s)) return true;
  }
  return false;
}

// A TrainJob's pod counts come from its runtime: the reconciler writes them into the status
// (replicaStatuses[<replicated job>].replicas) on its first pass; until then there is nothing to
// log (nullopt), and MLflow keeps a param's first value for good.
static std::optional<std::vector<Param>> TrainJobParams(const model::Job& job) {
  std::vector<Param> params;
  int trainer_pods = 0;
  for (const auto& [rjob, status] : job.status().replica_statuses()) {
    if (status.replicas() <= 0) return std::nullopt;
    params.push_back({"coach.replicas." + rjob, absl::StrCat(status.replicas())});
    if (rjob == model::kTrainerReplicatedJob) trainer_pods = status.replicas();
  }
  if (params.empty()) return std::nullopt;
  const trainer::RuntimeReference runtime = trainer::RuntimeReferenceOf(job);
  params.push_back({"coach.runtime", absl::StrCat(runtime.kind, "/", runtime.name)});
  const nlohmann::json spec =
      nlohmann::json::parse(job.spec().train_job_spec_json(), nullptr, false);
  const nlohmann::json trainer =
      spec.is_object() ? spec.value("trainer", nlohmann::json::object()) : nlohmann::json::object();
  int nproc = 1;
  if (trainer.is_object()) {
    if (trainer.contains("image") && trainer["image"].is_string()) {
      params.push_back(
          {"coach.image.trainer", trainer["image"].get<std::string>().substr(0, 6000)});
    }
    if (trainer.contains("numProcPerNode")) {
      const nlohmann::json& n = trainer["numProcPerNode"];
      const std::string text = n.is_string() ? n.get<std::string>() : n.dump();
      params.push_back({"coach.nproc_per_node", text.substr(0, 64)});
      if (!absl::SimpleAtoi(text, &nproc) || nproc < 1) nproc = 1;
    }
  }
  if (trainer_pods > 0) {
    params.push_back({"coach.world_size", absl::StrCat(trainer_pods * nproc)});
  }
  return params;
}

// Under coach.: the job's master logs into this run too, and MLflow refuses a second value for a
// param (a training script's own "world_size" must not collide with ours).
std::optional<std::vector<Param>> RunParams(const model::Job& job) {
  if (job.kind() == api::v1::TRAIN_JOB) return TrainJobParams(job);
  std::vector<Param> params;
  int total = 0;
  for (const std::string& type : reconcile::ReplicaTypes(job)) {
    const int n = reconcile::Replicas(job, type);
    total += n;
    params.push_back({"coach.replicas." + type, absl::StrCat(n)});
    params.push_back({"coach.restart_policy." + type, reconcile::RestartPolicy(job, type)});
    absl::StatusOr<model::Json> tmpl = reconcile::ParseTemplate(job, type);
    if (tmpl.ok()) {
      const model::Json* containers = reconcile::MutableContainers(*tmpl);
      if (containers != nullptr && !containers->empty() && (*containers)[0].is_object()) {
        const std::string image = (*containers)[0].value("image", "");
        if (!image.empty()) params.push_back({"coach.image." + type, image.substr(0, 6000)});
      }
    }
  }
  int nproc = 1;
  if (job.spec().has_nproc_per_node()) {
    params.push_back({"coach.nproc_per_node", job.spec().nproc_per_node()});
    if (!absl::SimpleAtoi(job.spec().nproc_per_node(), &nproc) || nproc < 1) nproc = 1;
  }
  params.push_back({"coach.world_size", absl::StrCat(total * nproc)});
  return params;
}

std::map<std::string, std::string> ConditionTags(const model::JobStatus& status) {
  std::map<std::string, std::string> tags;
  std::string state = "Created";
  for (const char* s : kStates) {
    if (reconcile::HasTrueCondition(status, s)) {
      state = s;
      break;
    }
  }
  tags["coach.state"] = state;
  const api::v1::JobCondition* latest = nullptr;
  for (const api::v1::JobCondition& c : status.conditions()) {
    tags["coach.condition." + c.type()] = c.status();
    if (c.status() == "True" &&
        (latest == nullptr || reconcile::FromTimestamp(c.last_transition_time()) >=
                                  reconcile::FromTimestamp(latest->last_transition_time()))) {
      latest = &c;
    }
  }
  if (latest != nullptr && !latest->message().empty()) {
    tags["coach.message"] = latest->message().substr(0, 8000);
  }
  return tags;
}

void MlflowTracker::Save(const SyncContext& ctx) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(ctx.uid);
  if (it != jobs_.end()) it->second.progress = ctx.entry.progress;
}

absl::Status MlflowTracker::Sync(const std::string& uid, std::string* op) {
  SyncContext ctx;
  ctx.uid = uid;
  ctx.op = op;
  std::optional<Relink> relink;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(uid);
    if (it != jobs_.end()) {
      ctx.entry = it->second;
    } else {
      auto r = relink_.find(uid);
      if (r == relink_.end()) return absl::OkStatus();
      relink = std::move(r->second);
      relink_.erase(r);
    }
  }
  if (relink.has_value()) {
    LookAgain(uid, *std::move(relink), op);
    return absl::OkStatus();
  }
  const model::Job& job = ctx.entry.job;
  ctx.key = JobKey(job);
  std::optional<reconcile::MlflowTarget> target = reconcile::MlflowTargetFor(job, options_.mlflow);
  if (!target.has_value()) {
    absl::MutexLock lock(&mu_);
    jobs_.erase(uid);
    return absl::OkStatus();
  }
  ctx.target = *std::move(target);
  ctx.finished = reconcile::IsFinished(job.status());
  ctx.ending = ctx.finished || ctx.entry.deleted;
  if (ctx.entry.progress.uri != ctx.target.tracking_uri) {
    ctx.entry.progress.uri = ctx.target.tracking_uri;
    Save(ctx);  // the worker marks this URI failing on a transient error
  }
  *op = "client";
  ASSIGN_OR_RETURN(ctx.client, ClientFor(ctx.entry.progress.uri));

  RETURN_IF_ERROR(EnsureExperiment(ctx));
  RETURN_IF_ERROR(EnsureRun(ctx));
  RETURN_IF_ERROR(CheckRunEnded(ctx));
  RETURN_IF_ERROR(AnnotateJob(ctx));
  NoteServerAnswered(ctx);
  RETURN_IF_ERROR(TagIncomplete(ctx));
  RETURN_IF_ERROR(LogParams(ctx));
  RETURN_IF_ERROR(LogConditionTags(ctx));
  RETURN_IF_ERROR(UploadAttemptLogs(ctx));
  RETURN_IF_ERROR(UploadLogs(ctx));
  RETURN_IF_ERROR(LinkCodeRuns(ctx));
  RETURN_IF_ERROR(EndRun(ctx));
  RETURN_IF_ERROR(RecordDeletion(ctx));
  ForgetEnded(ctx);
  return absl::OkStatus();
}

// Not saved on its own: the id is cached per URI and name, and saved with the run's.
absl::Status MlflowTracker::EnsureExperiment(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.experiment_id.empty()) p.experiment_id = ctx.target.experiment_id;
  if (!p.experiment_id.empty()) return absl::OkStatus();
  const std::string cache_key = p.uri + "\n" + ctx.target.experiment;
  {
    absl::MutexLock lock(&mu_);
    auto it = experiments_.find(cache_key);
    if (it != experiments_.end()) p.experiment_id = it->second;
  }
  if (!p.experiment_id.empty()) return absl::OkStatus();
  *ctx.op = "experiment";
  ASSIGN_OR_RETURN(p.experiment_id, ctx.client->GetOrCreateExperiment(ctx.target.experiment));
  absl::MutexLock lock(&mu_);
  experiments_[cache_key] = p.experiment_id;
  return absl::OkStatus();
}

absl::Status MlflowTracker::EnsureRun(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.run_id.empty()) p.run_id = ctx.target.run_id;
  if (!p.run_id.empty() && !ctx.target.run_id.empty()) ctx.found_existing = true;
  if (!p.run_id.empty()) return absl::OkStatus();
  *ctx.op = "search_runs";
  mlflow::SearchRunsRequest search;
  search.experiment_ids = {p.experiment_id};
  search.filter = absl::StrCat("tags.`coach.job_uid` = '", ctx.uid, "'");
  search.max_results = 1;
  ASSIGN_OR_RETURN(std::vector<mlflow::RunInfo> runs, ctx.client->SearchRuns(search));
  if (!runs.empty()) {
    p.run_id = runs[0].run_id;
    ctx.found_existing = true;
  } else {
    RETURN_IF_ERROR(NewRun(ctx));
  }
  Save(ctx);
  return absl::OkStatus();
}

absl::Status MlflowTracker::NewRun(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  const model::Job& job = ctx.entry.job;
  // Replicas that are running already did not get this run's id.
  const bool late = ctx.entry.released_without_run || ReplicasStarted(job.status());
  *ctx.op = "create_run";
  mlflow::CreateRunRequest create;
  create.experiment_id = p.experiment_id;
  create.run_name = ctx.key;
  create.start_time_ms = ToMs(reconcile::FromTimestamp(job.metadata().creation_timestamp()));
  if (*create.start_time_ms <= 0) create.start_time_ms.reset();
  create.tags = {{"coach.job_uid", ctx.uid},
                 {"coach.kind", KindName(job)},
                 {"coach.namespace", job.metadata().namespace_()},
                 {"coach.job_name", job.metadata().name()},
                 {"coach.backend", options_.backend},
                 {"coach.version", kCoachVersion},
                 {"mlflow.source.type", "JOB"},
                 {"mlflow.source.name", "coach/" + ctx.key}};
  if (late) {
    create.tags.push_back({kRunIncompleteTag, "true"});
    create.tags.push_back({kRunIncompleteReasonTag, IncompleteReason()});
  }
  ASSIGN_OR_RETURN(mlflow::RunInfo run, ctx.client->CreateRun(create));
  p.run_id = run.run_id;
  if (late) {
    p.incomplete_tagged = true;
    IncompleteEvent(job, p.run_id);
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.runs_created;
  }
  if (created_ != nullptr) created_->Add({});
  spdlog::info("mlflow: job {} -> run {} (experiment {})", ctx.key, p.run_id, p.experiment_id);
  return absl::OkStatus();
}

absl::Status MlflowTracker::CheckRunEnded(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (!ctx.found_existing || p.run_checked || !ctx.ending) return absl::OkStatus();
  *ctx.op = "get_run";
  ASSIGN_OR_RETURN(mlflow::Run run, ctx.client->GetRun(p.run_id));
  p.run_checked = true;
  // The training code may have ended the run itself (a `with mlflow.start_run():` block): only
  // the operator's own mark says the final status is recorded.
  if (Terminal(run.info.status) && run.tags.count(kRunEndedTag) > 0) {
    p.terminated = true;
    p.logs_uploaded = true;
  }
  Save(ctx);
  return absl::OkStatus();
}

// The annotations survive restarts and reach the replicas' environment.
absl::Status MlflowTracker::AnnotateJob(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (ctx.entry.deleted || p.annotated) return absl::OkStatus();
  if (ctx.target.run_id != p.run_id || ctx.target.experiment_id != p.experiment_id) {
    *ctx.op = "annotate";
    absl::Status annotated =
        hooks_.annotate
            ? hooks_.annotate(ctx.entry.job,
                              {{reconcile::kAnnotationMlflowRunId, p.run_id},
                               {reconcile::kAnnotationMlflowExperimentId, p.experiment_id}})
            : absl::OkStatus();
    // NotFound: deleted meanwhile; JobDeleting brings the final snapshot.
    if (!annotated.ok() && !absl::IsNotFound(annotated)) return annotated;
  }
  p.annotated = true;
  Save(ctx);
  return absl::OkStatus();
}

void MlflowTracker::NoteServerAnswered(SyncContext& ctx) {
  absl::MutexLock lock(&mu_);
  uri_failing_since_.erase(ctx.entry.progress.uri);
  // The bound may have been hit after this attempt read the job (a run created just too late).
  auto it = jobs_.find(ctx.uid);
  if (it != jobs_.end()) ctx.entry.released_without_run = it->second.released_without_run;
}

absl::Status MlflowTracker::TagIncomplete(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (!ctx.entry.released_without_run || p.incomplete_tagged || p.terminated) {
    return absl::OkStatus();
  }
  *ctx.op = "set_tags";
  RETURN_IF_ERROR(ctx.client->LogBatch(
      p.run_id, {}, {},
      {{kRunIncompleteTag, "true"}, {kRunIncompleteReasonTag, IncompleteReason()}}));
  p.incomplete_tagged = true;
  Save(ctx);
  if (!ctx.entry.deleted) IncompleteEvent(ctx.entry.job, p.run_id);
  return absl::OkStatus();
}

absl::Status MlflowTracker::LogParams(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.terminated || p.params_logged) return absl::OkStatus();
  std::optional<std::vector<Param>> params = RunParams(ctx.entry.job);
  if (!params) return absl::OkStatus();  // a TrainJob before its first pass: the next sync
  *ctx.op = "log_params";
  RETURN_IF_ERROR(ctx.client->LogBatch(p.run_id, {}, *params, {}));
  p.params_logged = true;
  Save(ctx);
  return absl::OkStatus();
}

absl::Status MlflowTracker::LogConditionTags(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.terminated) return absl::OkStatus();
  std::vector<Tag> changed;
  for (const auto& [k, v] : ConditionTags(ctx.entry.job.status())) {
    auto it = p.tags_sent.find(k);
    if (it == p.tags_sent.end() || it->second != v) changed.push_back({k, v});
  }
  if (changed.empty()) return absl::OkStatus();
  *ctx.op = "set_tags";
  RETURN_IF_ERROR(ctx.client->LogBatch(p.run_id, {}, {}, changed));
  for (const Tag& tag : changed) p.tags_sent[tag.key] = tag.value;
  Save(ctx);
  return absl::OkStatus();
}

absl::Status MlflowTracker::UploadAttemptLogs(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.terminated || ctx.entry.attempt_logs.empty()) return absl::OkStatus();
  *ctx.op = "upload_attempt_logs";
  for (const auto& [name, text] : ctx.entry.attempt_logs) {
    absl::Status up = ctx.client->UploadArtifact(p.run_id, "logs/" + name + ".log", text);
    const bool refused = absl::IsFailedPrecondition(up) || absl::IsInvalidArgument(up);
    if (refused) {
      // The server does not serve artifacts (or refuses the path): not worth retrying.
      CountError("upload_attempt_logs", up);
      spdlog::warn("mlflow: log {} of {} not uploaded: {}", name, ctx.key, up.ToString());
    } else {
      RETURN_IF_ERROR(up);
      p.attempt_logs_uploaded.insert(name);
    }
    {
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(ctx.uid);
      if (it != jobs_.end()) {
        auto log = it->second.attempt_logs.find(name);
        // A newer read of the same log (KeepLogs again) waits for the next attempt.
        if (log != it->second.attempt_logs.end() && log->second.size() == text.size()) {
          attempt_log_bytes_ -= static_cast<int64_t>(log->second.size());
          it->second.attempt_logs.erase(log);
        }
      }
    }
    Save(ctx);
  }
  return absl::OkStatus();
}

absl::Status MlflowTracker::UploadLogs(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.terminated || !ctx.ending || p.logs_uploaded) return absl::OkStatus();
  std::map<std::string, std::string> logs;
  if (ctx.entry.have_final_logs) {
    logs = ctx.entry.final_logs;
  } else if (hooks_.read_logs && (!ctx.entry.deleted || ctx.entry.read_logs_when_deleted)) {
    absl::StatusOr<std::map<std::string, std::string>> read =
        hooks_.read_logs(ctx.entry.job, options_.max_log_bytes);
    if (read.ok()) {
      logs = std::move(read).value();
    } else {
      spdlog::warn("mlflow: logs of {} not read: {}", ctx.key, read.status().ToString());
    }
    // Deleted meanwhile: JobDeleting read the logs before the backend removed them, which this
    // read may have come after.
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(ctx.uid);
    if (it != jobs_.end() && it->second.have_final_logs) logs = it->second.final_logs;
  }
  *ctx.op = "upload_logs";
  const int attempt = ctx.entry.job.status().coach().attempt();
  for (const auto& [replica, text] : logs) {
    const std::string name = history::KeptLogName(attempt, replica);
    // Kept as the pod was deleted (cleanPodPolicy): what is read now is less.
    if (p.attempt_logs_uploaded.count(name) > 0) continue;
    absl::Status up = ctx.client->UploadArtifact(p.run_id, "logs/" + name + ".log", text);
    if (absl::IsFailedPrecondition(up) || absl::IsInvalidArgument(up)) {
      // The server does not serve artifacts (or refuses the path): not worth retrying.
      CountError("upload_logs", up);
      spdlog::warn("mlflow: log of {} {} not uploaded: {}", ctx.key, replica, up.ToString());
      break;
    }
    RETURN_IF_ERROR(up);
  }
  p.logs_uploaded = true;
  Save(ctx);
  return absl::OkStatus();
}

absl::Status MlflowTracker::LinkCodeRuns(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.terminated || !ctx.ending || p.runs_linked) return absl::OkStatus();
  *ctx.op = "link_runs";
  Relink relink{ctx.entry.job, p.uri, p.experiment_id, p.run_id, {}, ctx.entry.deleted};
  RETURN_IF_ERROR(LinkRuns(ctx.uid, relink, *ctx.client, /*second_look=*/false));
  p.runs_linked = true;
  Save(ctx);
  absl::MutexLock lock(&mu_);
  if (!options_.relink_after.empty() && relink_.size() < options_.max_jobs) {
    relink_[ctx.uid] = std::move(relink);
  }
  return absl::OkStatus();
}

absl::Status MlflowTracker::EndRun(SyncContext& ctx) {
  SyncProgress& p = ctx.entry.progress;
  if (p.terminated || !ctx.ending) return absl::OkStatus();
  const model::Job& job = ctx.entry.job;
  RunStatus status = RunStatus::kKilled;
  absl::Time end = clock_->Now();
  if (ctx.finished) {
    status = reconcile::HasTrueCondition(job.status(), "Succeeded") ? RunStatus::kFinished
                                                                    : RunStatus::kFailed;
    if (job.status().has_completion_time()) {
      end = reconcile::FromTimestamp(job.status().completion_time());
    }
  }
  *ctx.op = "terminate_run";
  RETURN_IF_ERROR(ctx.client->TerminateRun(p.run_id, status, ToMs(end)).status());
  RETURN_IF_ERROR(ctx.client->SetTag(p.run_id, kRunEndedTag, mlflow::RunStatusName(status)));
  p.terminated = true;
  Save(ctx);
  if (ended_ != nullptr) ended_->Add({mlflow::RunStatusName(status)});
  if (!options_.relink_after.empty()) {
    queue_.AddAt(ctx.uid, clock_->Now() + options_.relink_after.front());
  }
  spdlog::info("mlflow: job {}: run {} {}", ctx.key, p.run_id, mlflow::RunStatusName(status));
  absl::MutexLock lock(&mu_);
  ++stats_.runs_ended;
  return absl::OkStatus();
}

void MlflowTracker::ForgetEnded(const SyncContext& ctx) {
  if (!ctx.entry.progress.terminated) return;
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(ctx.uid);
  // A record that arrived meanwhile waits for the sync it queued.
  if (it != jobs_.end() && it->second.record.has_value() && !ctx.entry.progress.deletion_recorded) {
    return;
  }
  // A deletion that arrived meanwhile needs nothing more (the run has ended).
  if (it != jobs_.end()) {
    const bool deleted = it->second.deleted;
    jobs_.erase(it);
    if (!deleted) done_.insert(ctx.uid);
  }
}

void MlflowTracker::LookAgain(const std::string& uid, Relink relink, std::string* op) {
  *op = "link_runs";
  absl::StatusOr<mlflow::TrackingClient*> client = ClientFor(relink.uri);
  absl::Status s =
      client.ok() ? LinkRuns(uid, relink, **client, /*second_look=*/true) : client.status();
  if (!s.ok()) spdlog::warn("mlflow: job {}: link_runs: {}", JobKey(relink.job), s.ToString());
  if (++relink.looks < options_.relink_after.size()) {
    const absl::Duration wait =
        options_.relink_after[relink.looks] - options_.relink_after[relink.looks - 1];
    absl::MutexLock lock(&mu_);
    relink_[uid] = std::move(relink);
    queue_.AddAt(uid, clock_->Now() + wait);
  }
}

absl::Status MlflowTracker::LinkRuns(const std::string& uid, Relink& relink,
                                     mlflow::TrackingClient& client, bool second_look) {
  ASSIGN_OR_RETURN(std::vector<LinkedRun> runs,
                   FindLinkedRuns(client, relink.run_id, uid, relink.experiment_id));
  const std::vector<mlflow::Tag> tags = LinkTags(runs);
  for (size_t i = 0; i < tags.size(); i += 100) {  // MLflow's bound on tags per batch
    const size_t end = std::min(tags.size(), i + 100);
    RETURN_IF_ERROR(client.LogBatch(
        relink.run_id, {}, {}, std::vector<mlflow::Tag>(tags.begin() + i, tags.begin() + end)));
  }
  std::vector<const LinkedRun*> fresh;
  for (const LinkedRun& run : runs) {
    if (relink.linked.insert(run.run_id).second) fresh.push_back(&run);
  }
  if (fresh.empty()) return absl::OkStatus();
  if (!relink.deleted && hooks_.annotate) {
    absl::Status annotated = hooks_.annotate(
        relink.job, {{reconcile::kAnnotationMlflowRuns,
                      RunsAnnotation(relink.uri, relink.experiment_id, relink.run_id, runs)}});
    if (absl::IsNotFound(annotated)) {
      relink.deleted = true;
    } else if (!annotated.ok()) {
      return annotated;
    }
  }
  for (const LinkedRun* run : fresh) {
    Event(relink.job, "Normal", "MlflowRunLinked",
          absl::StrCat(run->replica.empty() ? "the training code" : run->replica,
                       run->rank.empty() ? "" : absl::StrCat(" rank ", run->rank),
                       " logged to MLflow run ",
                       RunUrl(run->tracking_uri.empty() ? relink.uri : run->tracking_uri,
                              run->experiment_id, run->run_id),
                       second_look ? " (after the job ended)" : ""));
  }
  return absl::OkStatus();
}

}  // namespace coach::tracking
