#include "operator/tracking/mlflow_tracker.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/reconcile/replicas.h"
#include "operator/tracking/linked_runs.h"

namespace coach::tracking {
namespace {

using mlflow::Param;
using mlflow::RunStatus;
using mlflow::Tag;

int64_t ToMs(absl::Time t) { return absl::ToUnixMillis(t); }

std::string KeyOf(const model::Job& job) {
  return job.metadata().namespace_() + "/" + job.metadata().name();
}

std::string KindName(const model::Job& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return info == nullptr ? "Unknown" : std::string(info->name);
}

bool Terminal(RunStatus s) {
  return s == RunStatus::kFinished || s == RunStatus::kFailed || s == RunStatus::kKilled;
}

// Set after the operator ended the run (restart: nothing left to do).
constexpr char kEndedTag[] = "coach.run_ended";
// On a run created after (some of) the job's replicas started without its id.
constexpr char kIncompleteTag[] = "coach.run_incomplete";
constexpr char kIncompleteReasonTag[] = "coach.run_incomplete_reason";

const char* const kStates[] = {"Succeeded", "Failed", "Suspended", "Restarting", "Running"};

}  // namespace

bool ReplicasStarted(const model::JobStatus& status) {
  if (status.has_start_time()) return true;
  for (const char* s : {"Running", "Restarting", "Succeeded", "Failed"}) {
    if (reconcile::HasTrueCondition(status, s)) return true;
  }
  return false;
}

// Under coach.: the job's master logs into this run too, and MLflow refuses a second value for a
// param (a training script's own "world_size" must not collide with ours).
std::vector<Param> RunParams(const model::Job& job) {
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

MlflowTracker::MlflowTracker(MlflowTrackerOptions options, MlflowTrackerHooks hooks,
                             ::coach::Clock* clock, metrics::Registry* registry)
    : options_(std::move(options)),
      hooks_(std::move(hooks)),
      clock_(clock),
      queue_(clock, core::WorkQueue::Options{options_.backoff_base, options_.backoff_cap,
                                             absl::Milliseconds(100)}) {
  if (registry != nullptr) {
    errors_ =
        registry->Counter("coach_mlflow_errors_total",
                          "MLflow tracking calls that failed, by step and kind", {"op", "kind"});
    backlog_ = registry->Gauge("coach_mlflow_backlog", "Jobs with MLflow tracking work pending");
    dropped_ = registry->Counter("coach_mlflow_dropped_jobs_total",
                                 "Jobs not tracked because the tracking table was full");
    created_ = registry->Counter("coach_mlflow_runs_created_total", "MLflow runs created");
    ended_ = registry->Counter("coach_mlflow_runs_ended_total", "MLflow runs ended, by status",
                               {"status"});
    given_up_ = registry->Counter("coach_mlflow_given_up_total",
                                  "Jobs whose tracking was abandoned after permanent errors");
  }
}

MlflowTracker::~MlflowTracker() { Stop(absl::ZeroDuration()); }

void MlflowTracker::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
}

void MlflowTracker::Stop(absl::Duration drain) {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  if (drain > absl::ZeroDuration()) WaitIdle(drain);
  queue_.ShutDown();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void MlflowTracker::UpdateBacklog() {
  size_t pending = 0;
  for (const auto& [uid, t] : jobs_) pending += t.synced < t.seen ? 1 : 0;
  stats_.backlog = pending;
  if (backlog_ != nullptr) backlog_->Set({}, static_cast<double>(stats_.backlog));
}

void MlflowTracker::Enqueue(const model::Job& job, bool deleted,
                            std::map<std::string, std::string> logs, bool have_logs) {
  const std::string& uid = job.metadata().uid();
  if (uid.empty()) return;
  {
    absl::MutexLock lock(&mu_);
    if (done_.count(uid) > 0) {
      if (deleted) done_.erase(uid);  // nothing more will be seen of it
      return;
    }
    auto it = jobs_.find(uid);
    if (it == jobs_.end()) {
      if (!deleted && !reconcile::MlflowTargetFor(job, options_.mlflow).has_value()) return;
      if (jobs_.size() >= options_.max_jobs) {
        ++stats_.dropped_jobs;
        if (dropped_ != nullptr) dropped_->Add({});
        spdlog::warn("mlflow: {} not tracked: {} jobs are tracked already", KeyOf(job),
                     jobs_.size());
        return;
      }
      it = jobs_.emplace(uid, Tracked{}).first;
    }
    Tracked& t = it->second;
    if (t.deleted) return;  // the deletion snapshot is the last word
    t.job = job;
    ++t.seen;
    if (deleted) {
      t.deleted = true;
      t.final_logs = std::move(logs);
      t.have_final_logs = have_logs;
    }
  }
  queue_.Add(uid);
}

void MlflowTracker::JobSeen(const model::Job& job) { Enqueue(job, false, {}, false); }

void MlflowTracker::JobDeleting(const model::Job& job) {
  const std::string& uid = job.metadata().uid();
  {
    absl::MutexLock lock(&mu_);
    if (done_.count(uid) > 0) {
      done_.erase(uid);
      return;
    }
    if (jobs_.count(uid) == 0 && !reconcile::MlflowTargetFor(job, options_.mlflow).has_value()) {
      return;
    }
  }
  // The replicas (and their logs) are gone once the backend forgets the job: read them now,
  // from local files; the upload happens later, off this path.
  std::map<std::string, std::string> logs;
  bool have_logs = false;
  if (hooks_.read_logs) {
    absl::StatusOr<std::map<std::string, std::string>> read =
        hooks_.read_logs(job, options_.max_log_bytes);
    if (read.ok()) {
      logs = std::move(read).value();
      have_logs = true;
    } else {
      spdlog::warn("mlflow: logs of {} not read: {}", KeyOf(job), read.status().ToString());
    }
  }
  Enqueue(job, true, std::move(logs), have_logs);
}

std::optional<absl::Time> MlflowTracker::HoldStartUntil(const model::Job& job) {
  if (options_.run_wait <= absl::ZeroDuration()) return std::nullopt;
  std::optional<reconcile::MlflowTarget> target = reconcile::MlflowTargetFor(job, options_.mlflow);
  if (!target.has_value() || !target->run_id.empty()) return std::nullopt;
  const std::string& uid = job.metadata().uid();
  {
    absl::MutexLock lock(&mu_);
    // Given up (permanent errors) or ended: no run id is coming.
    if (done_.count(uid) > 0) return std::nullopt;
    if (!started_ || stopped_) return std::nullopt;
    auto it = jobs_.find(uid);
    // Released once: replicas created later start at once too (the run id reaches those
    // created after it is on the job).
    if (it != jobs_.end() && it->second.released_without_run) return std::nullopt;
  }
  // Make sure the run is on its way (the controller calls this before JobSeen).
  JobSeen(job);
  const absl::Time now = clock_->Now();
  std::string last_error;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(uid);
    if (it == jobs_.end()) return std::nullopt;  // not tracked (the table is full)
    Tracked& t = it->second;
    // From the first hold in this process, not the job's creation: a job created while the
    // operator was down (or on another clock) still gets the whole wait.
    if (t.hold_since == absl::InfinitePast()) t.hold_since = now;
    const absl::Time deadline = t.hold_since + options_.run_wait;
    if (now < deadline) return deadline;
    t.released_without_run = true;
    last_error = t.last_error;
  }
  // Recorded here, before the replicas exist (the controller records its own events on this
  // path too: a local write, or a queued one on Kubernetes).
  Event(job, "Warning", "MlflowRunNotReady",
        absl::StrCat("replicas start without the job's run id: the MLflow run was not ready after "
                     "waiting ",
                     absl::FormatDuration(options_.run_wait), " (--mlflow-run-wait) for ",
                     target->tracking_uri,
                     last_error.empty() ? "" : absl::StrCat(" (last error: ", last_error, ")"),
                     "; a replica's mlflow.start_run() makes a run of its own; the job's run is "
                     "made when the server answers and tagged ",
                     kIncompleteTag, "=true"));
  spdlog::warn("mlflow: job {}: replicas start without the job's run id: no run after {}",
               KeyOf(job), absl::FormatDuration(options_.run_wait));
  return std::nullopt;
}

bool MlflowTracker::WaitIdle(absl::Duration timeout) {
  // Counted in sleeps rather than read from clock_: a test's fake clock stands still while
  // the workers drain, and this bound must still end the wait.
  constexpr absl::Duration kPoll = absl::Milliseconds(10);
  for (absl::Duration waited;; waited += kPoll) {
    {
      absl::MutexLock lock(&mu_);
      UpdateBacklog();
      if (stats_.backlog == 0) return true;
    }
    if (waited >= timeout) return false;
    absl::SleepFor(kPoll);
  }
}

MlflowTracker::Stats MlflowTracker::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void MlflowTracker::CountError(const std::string& op, const absl::Status& status) {
  const bool transient = mlflow::IsTransient(status);
  if (errors_ != nullptr) errors_->Add({op, transient ? "transient" : "permanent"});
  absl::MutexLock lock(&mu_);
  ++stats_.errors;
}

absl::StatusOr<mlflow::TrackingClient*> MlflowTracker::ClientFor(const std::string& uri) {
  {
    absl::MutexLock lock(&mu_);
    auto it = clients_.find(uri);
    if (it != clients_.end()) return it->second.get();
  }
  if (!hooks_.make_client) return absl::FailedPreconditionError("no MLflow client factory");
  ASSIGN_OR_RETURN(std::unique_ptr<mlflow::TrackingClient> client, hooks_.make_client(uri));
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = clients_.emplace(uri, std::move(client));
  return it->second.get();
}

void MlflowTracker::Save(const std::string& uid, const Tracked& t) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(uid);
  if (it == jobs_.end()) return;
  Tracked& s = it->second;
  s.uri = t.uri;
  s.experiment_id = t.experiment_id;
  s.run_id = t.run_id;
  s.run_checked = t.run_checked;
  s.annotated = t.annotated;
  s.params_logged = t.params_logged;
  s.tags_sent = t.tags_sent;
  s.logs_uploaded = t.logs_uploaded;
  s.runs_linked = t.runs_linked;
  s.terminated = t.terminated;
  s.incomplete_tagged = t.incomplete_tagged;
}

std::string MlflowTracker::IncompleteReason() const {
  return absl::StrCat("replicas started before this run existed (after waiting up to ",
                      absl::FormatDuration(options_.run_wait),
                      " for the tracking server) and lack its id: what they logged "
                      "through mlflow.start_run() is in runs of their own");
}

void MlflowTracker::IncompleteEvent(const model::Job& job, const std::string& run_id) {
  Event(job, "Warning", "MlflowRunIncomplete",
        absl::StrCat("MLflow run ", run_id,
                     " was created after replicas started without "
                     "its id; it is tagged ",
                     kIncompleteTag, "=true (replicas created from now on get its id)"));
}

void MlflowTracker::Event(const model::Job& job, const std::string& type, const std::string& reason,
                          const std::string& message) {
  if (!hooks_.event) return;
  absl::Status s = hooks_.event(job, type, reason, message, clock_->Now());
  if (!s.ok()) {
    spdlog::warn("mlflow: job {}: event {} not recorded: {}", KeyOf(job), reason, s.ToString());
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

absl::Status MlflowTracker::Sync(const std::string& uid, std::string* op) {
  Tracked t;
  {
    absl::ReleasableMutexLock lock(&mu_);
    auto it = jobs_.find(uid);
    if (it == jobs_.end()) {
      auto relink = relink_.find(uid);
      if (relink == relink_.end()) return absl::OkStatus();
      Relink r = std::move(relink->second);
      relink_.erase(relink);
      lock.Release();
      // Best effort: a failure here is logged, not retried.
      *op = "link_runs";
      absl::StatusOr<mlflow::TrackingClient*> client = ClientFor(r.uri);
      absl::Status s =
          client.ok() ? LinkRuns(uid, r, **client, /*second_look=*/true) : client.status();
      if (!s.ok()) spdlog::warn("mlflow: job {}: link_runs: {}", KeyOf(r.job), s.ToString());
      if (++r.looks < options_.relink_after.size()) {
        const absl::Duration wait =
            options_.relink_after[r.looks] - options_.relink_after[r.looks - 1];
        absl::MutexLock again(&mu_);
        relink_[uid] = std::move(r);
        queue_.AddAt(uid, clock_->Now() + wait);
      }
      return absl::OkStatus();
    }
    t = it->second;
  }
  const model::Job& job = t.job;
  const std::string key = KeyOf(job);
  std::optional<reconcile::MlflowTarget> target = reconcile::MlflowTargetFor(job, options_.mlflow);
  if (!target.has_value()) {
    absl::MutexLock lock(&mu_);
    jobs_.erase(uid);
    return absl::OkStatus();
  }
  if (t.uri != target->tracking_uri) {
    t.uri = target->tracking_uri;
    Save(uid, t);  // the worker marks this URI failing on a transient error
  }
  *op = "client";
  ASSIGN_OR_RETURN(mlflow::TrackingClient * client, ClientFor(t.uri));

  // Experiment.
  if (t.experiment_id.empty()) t.experiment_id = target->experiment_id;
  if (t.experiment_id.empty()) {
    const std::string cache_key = t.uri + "\n" + target->experiment;
    {
      absl::MutexLock lock(&mu_);
      auto it = experiments_.find(cache_key);
      if (it != experiments_.end()) t.experiment_id = it->second;
    }
    if (t.experiment_id.empty()) {
      *op = "experiment";
      ASSIGN_OR_RETURN(t.experiment_id, client->GetOrCreateExperiment(target->experiment));
      absl::MutexLock lock(&mu_);
      experiments_[cache_key] = t.experiment_id;
    }
  }

  // Run: the annotation's, else the one tagged with the job's uid, else a new one.
  const bool finished = reconcile::IsFinished(job.status());
  bool found_existing = false;
  if (t.run_id.empty()) t.run_id = target->run_id;
  if (!t.run_id.empty() && !target->run_id.empty()) found_existing = true;
  if (t.run_id.empty()) {
    *op = "search_runs";
    mlflow::SearchRunsRequest search;
    search.experiment_ids = {t.experiment_id};
    search.filter = absl::StrCat("tags.`coach.job_uid` = '", uid, "'");
    search.max_results = 1;
    ASSIGN_OR_RETURN(std::vector<mlflow::RunInfo> runs, client->SearchRuns(search));
    if (!runs.empty()) {
      t.run_id = runs[0].run_id;
      found_existing = true;
    } else {
      // Replicas that are running already did not get this run's id.
      const bool late = t.released_without_run || ReplicasStarted(job.status());
      *op = "create_run";
      mlflow::CreateRunRequest create;
      create.experiment_id = t.experiment_id;
      create.run_name = key;
      create.start_time_ms = ToMs(reconcile::FromTimestamp(job.metadata().creation_timestamp()));
      if (*create.start_time_ms <= 0) create.start_time_ms.reset();
      create.tags = {{"coach.job_uid", uid},
                     {"coach.kind", KindName(job)},
                     {"coach.namespace", job.metadata().namespace_()},
                     {"coach.job_name", job.metadata().name()},
                     {"coach.backend", options_.backend},
                     {"coach.version", kCoachVersion},
                     {"mlflow.source.type", "JOB"},
                     {"mlflow.source.name", "coach/" + key}};
      if (late) {
        create.tags.push_back({kIncompleteTag, "true"});
        create.tags.push_back({kIncompleteReasonTag, IncompleteReason()});
      }
      ASSIGN_OR_RETURN(mlflow::RunInfo run, client->CreateRun(create));
      t.run_id = run.run_id;
      if (late) {
        t.incomplete_tagged = true;
        IncompleteEvent(job, t.run_id);
      }
      {
        absl::MutexLock lock(&mu_);
        ++stats_.runs_created;
      }
      if (created_ != nullptr) created_->Add({});
      spdlog::info("mlflow: job {} -> run {} (experiment {})", key, t.run_id, t.experiment_id);
    }
    Save(uid, t);
  }
  if (found_existing && !t.run_checked && (finished || t.deleted)) {
    // After a restart: a run that has already ended needs nothing more.
    *op = "get_run";
    ASSIGN_OR_RETURN(mlflow::Run run, client->GetRun(t.run_id));
    t.run_checked = true;
    // The training code may have ended the run itself (a `with mlflow.start_run():` block):
    // only the operator's own mark says the final status is recorded.
    if (Terminal(run.info.status) && run.tags.count(kEndedTag) > 0) {
      t.terminated = true;
      t.logs_uploaded = true;
    }
    Save(uid, t);
  }

  // The run id onto the job: survives restarts, reaches the replicas' environment.
  if (!t.deleted && !t.annotated) {
    if (target->run_id != t.run_id || target->experiment_id != t.experiment_id) {
      *op = "annotate";
      absl::Status annotated =
          hooks_.annotate
              ? hooks_.annotate(job, {{reconcile::kAnnotationMlflowRunId, t.run_id},
                                      {reconcile::kAnnotationMlflowExperimentId, t.experiment_id}})
              : absl::OkStatus();
      // NotFound: deleted meanwhile; JobDeleting brings the final snapshot.
      if (!annotated.ok() && !absl::IsNotFound(annotated)) return annotated;
    }
    t.annotated = true;
    Save(uid, t);
  }
  {
    absl::MutexLock lock(&mu_);
    uri_failing_since_.erase(t.uri);
    // The bound may have been hit after this Sync read the job (a run created just too late).
    auto it = jobs_.find(uid);
    if (it != jobs_.end()) t.released_without_run = it->second.released_without_run;
  }
  if (t.released_without_run && !t.incomplete_tagged && !t.terminated) {
    *op = "set_tags";
    RETURN_IF_ERROR(client->LogBatch(
        t.run_id, {}, {}, {{kIncompleteTag, "true"}, {kIncompleteReasonTag, IncompleteReason()}}));
    t.incomplete_tagged = true;
    Save(uid, t);
    if (!t.deleted) IncompleteEvent(job, t.run_id);
  }

  if (!t.terminated) {
    if (!t.params_logged) {
      *op = "log_params";
      RETURN_IF_ERROR(client->LogBatch(t.run_id, {}, RunParams(job), {}));
      t.params_logged = true;
      Save(uid, t);
    }
    std::vector<Tag> changed;
    for (const auto& [k, v] : ConditionTags(job.status())) {
      auto it = t.tags_sent.find(k);
      if (it == t.tags_sent.end() || it->second != v) changed.push_back({k, v});
    }
    if (!changed.empty()) {
      *op = "set_tags";
      RETURN_IF_ERROR(client->LogBatch(t.run_id, {}, {}, changed));
      for (const Tag& tag : changed) t.tags_sent[tag.key] = tag.value;
      Save(uid, t);
    }
  }

  if (!t.terminated && (finished || t.deleted)) {
    if (!t.logs_uploaded) {
      std::map<std::string, std::string> logs;
      if (t.have_final_logs) {
        logs = t.final_logs;
      } else if (hooks_.read_logs && !t.deleted) {
        absl::StatusOr<std::map<std::string, std::string>> read =
            hooks_.read_logs(job, options_.max_log_bytes);
        if (read.ok()) {
          logs = std::move(read).value();
        } else {
          spdlog::warn("mlflow: logs of {} not read: {}", key, read.status().ToString());
        }
      }
      *op = "upload_logs";
      for (const auto& [replica, text] : logs) {
        absl::Status up = client->UploadArtifact(t.run_id, "logs/" + replica + ".log", text);
        if (absl::IsFailedPrecondition(up) || absl::IsInvalidArgument(up)) {
          // The server does not serve artifacts (or refuses the path): not worth retrying.
          CountError("upload_logs", up);
          spdlog::warn("mlflow: log of {} {} not uploaded: {}", key, replica, up.ToString());
          break;
        }
        RETURN_IF_ERROR(up);
      }
      t.logs_uploaded = true;
      Save(uid, t);
    }
    if (!t.runs_linked) {
      *op = "link_runs";
      Relink relink{job, t.uri, t.experiment_id, t.run_id, {}, t.deleted};
      RETURN_IF_ERROR(LinkRuns(uid, relink, *client, /*second_look=*/false));
      t.runs_linked = true;
      Save(uid, t);
      absl::MutexLock lock(&mu_);
      if (!options_.relink_after.empty() && relink_.size() < options_.max_jobs) {
        relink_[uid] = std::move(relink);
      }
    }
    RunStatus status = RunStatus::kKilled;
    absl::Time end = clock_->Now();
    if (finished) {
      status = reconcile::HasTrueCondition(job.status(), "Succeeded") ? RunStatus::kFinished
                                                                      : RunStatus::kFailed;
      if (job.status().has_completion_time()) {
        end = reconcile::FromTimestamp(job.status().completion_time());
      }
    }
    *op = "terminate_run";
    RETURN_IF_ERROR(client->TerminateRun(t.run_id, status, ToMs(end)).status());
    RETURN_IF_ERROR(client->SetTag(t.run_id, kEndedTag, mlflow::RunStatusName(status)));
    t.terminated = true;
    Save(uid, t);
    if (ended_ != nullptr) ended_->Add({mlflow::RunStatusName(status)});
    if (!options_.relink_after.empty()) {
      queue_.AddAt(uid, clock_->Now() + options_.relink_after.front());
    }
    spdlog::info("mlflow: job {}: run {} {}", key, t.run_id, mlflow::RunStatusName(status));
    absl::MutexLock lock(&mu_);
    ++stats_.runs_ended;
  }
  if (t.terminated) {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(uid);
    // A deletion that arrived meanwhile needs nothing more (the run has ended).
    if (it != jobs_.end()) {
      const bool deleted = it->second.deleted;
      jobs_.erase(it);
      if (!deleted) done_.insert(uid);
    }
  }
  return absl::OkStatus();
}

void MlflowTracker::Worker() {
  while (std::optional<std::string> uid = queue_.Get()) {
    int64_t seen = 0;
    {
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(*uid);
      if (it != jobs_.end()) seen = it->second.seen;
    }
    std::string op;
    absl::Status status = Sync(*uid, &op);
    if (status.ok()) {
      queue_.Forget(*uid);
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(*uid);
      if (it != jobs_.end()) it->second.synced = std::max(it->second.synced, seen);
    } else {
      CountError(op, status);
      bool give_up = false;
      bool held_now = false;
      std::string key;
      std::optional<model::Job> held;
      {
        absl::MutexLock lock(&mu_);
        auto it = jobs_.find(*uid);
        if (it != jobs_.end()) {
          key = KeyOf(it->second.job);
          it->second.last_error = absl::StrCat(op, ": ", status.ToString()).substr(0, 500);
          if (mlflow::IsTransient(status)) {
            if (!it->second.uri.empty()) uri_failing_since_.emplace(it->second.uri, clock_->Now());
            // Replicas held for the run id: retry often, so that they start soon after the
            // server answers (the hold's bound, not the backoff, limits their wait).
            held_now = it->second.run_id.empty() && it->second.hold_since != absl::InfinitePast() &&
                       !it->second.released_without_run;
          } else if (++it->second.permanent_failures >= options_.max_permanent_failures) {
            give_up = true;
            held = it->second.job;
            jobs_.erase(it);
            done_.insert(*uid);
            ++stats_.given_up;
          }
        }
      }
      if (give_up) {
        queue_.Forget(*uid);
        if (given_up_ != nullptr) given_up_->Add({});
        spdlog::error("mlflow: job {}: giving up tracking after {}: {}", key, op,
                      status.ToString());
        if (held.has_value()) {
          Event(*held, "Warning", "MlflowTrackingFailed",
                absl::StrCat("MLflow tracking abandoned after ", options_.max_permanent_failures,
                             " failures: ", op, ": ", status.ToString()));
          // Replicas held for a run id that will not come: start them now.
          if (hooks_.wake) hooks_.wake(*held);
        }
      } else {
        absl::Duration delay = queue_.AddRateLimited(*uid);
        if (held_now && delay > options_.held_retry_cap) {
          queue_.AddAt(*uid, clock_->Now() + options_.held_retry_cap);  // the earlier time wins
          delay = options_.held_retry_cap;
        }
        spdlog::warn("mlflow: job {}: {}: {} (retry in {})", key, op, status.ToString(),
                     absl::FormatDuration(delay));
      }
    }
    queue_.Done(*uid);
    absl::MutexLock lock(&mu_);
    UpdateBacklog();
  }
}

}  // namespace coach::tracking
