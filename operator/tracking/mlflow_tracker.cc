#include "operator/tracking/mlflow_tracker.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/reconcile/mlflow_env.h"

namespace coach::tracking {

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
        spdlog::warn("mlflow: {} not tracked: {} jobs are tracked already", JobKey(job),
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

bool MlflowTracker::Tracks(const model::Job& job) {
  return reconcile::MlflowTargetFor(job, options_.mlflow).has_value();
}

void MlflowTracker::KeepLogs(const model::Job& job, int attempt,
                             std::map<std::string, std::string> logs) {
  const std::string& uid = job.metadata().uid();
  if (uid.empty() || !Tracks(job)) return;
  {
    absl::MutexLock lock(&mu_);
    if (done_.count(uid) > 0) return;  // the run has ended
    auto it = jobs_.find(uid);
    if (it == jobs_.end()) {
      if (jobs_.size() >= options_.max_jobs) return;
      it = jobs_.emplace(uid, Tracked{}).first;
      it->second.job = job;
      ++it->second.seen;
    }
    for (auto& [replica, text] : logs) {
      const int64_t bytes = static_cast<int64_t>(text.size());
      if (attempt_log_bytes_ + bytes > options_.max_pending_log_bytes) {
        CountError("upload_attempt_logs", absl::ResourceExhaustedError("pending bound"));
        spdlog::warn("mlflow: log of {} {} of attempt {} not kept: {} bytes wait already",
                     JobKey(job), replica, attempt, attempt_log_bytes_);
        continue;
      }
      std::string& slot = it->second.attempt_logs[history::KeptLogName(attempt, replica)];
      attempt_log_bytes_ += bytes - static_cast<int64_t>(slot.size());
      slot = std::move(text);
    }
  }
  queue_.Add(uid);
}

absl::StatusOr<std::string> MlflowTracker::ReadLog(const model::Job& job, int attempt,
                                                   const std::string& replica) {
  std::optional<reconcile::MlflowTarget> target = reconcile::MlflowTargetFor(job, options_.mlflow);
  if (!target.has_value() || target->run_id.empty()) {
    return absl::NotFoundError(absl::StrCat(JobKey(job), " has no MLflow run"));
  }
  ASSIGN_OR_RETURN(mlflow::TrackingClient * client, ClientFor(target->tracking_uri));
  return client->DownloadArtifact(
      target->run_id, absl::StrCat("logs/", history::KeptLogName(attempt, replica), ".log"));
}

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
      spdlog::warn("mlflow: logs of {} not read: {}", JobKey(job), read.status().ToString());
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
                     kRunIncompleteTag, "=true"));
  spdlog::warn("mlflow: job {}: replicas start without the job's run id: no run after {}",
               JobKey(job), absl::FormatDuration(options_.run_wait));
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
                     kRunIncompleteTag, "=true (replicas created from now on get its id)"));
}

void MlflowTracker::Event(const model::Job& job, const std::string& type, const std::string& reason,
                          const std::string& message) {
  if (!hooks_.event) return;
  absl::Status s = hooks_.event(job, type, reason, message, clock_->Now());
  if (!s.ok()) {
    spdlog::warn("mlflow: job {}: event {} not recorded: {}", JobKey(job), reason, s.ToString());
  }
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
          key = JobKey(it->second.job);
          it->second.last_error = absl::StrCat(op, ": ", status.ToString()).substr(0, 500);
          if (mlflow::IsTransient(status)) {
            if (!it->second.progress.uri.empty()) {
              uri_failing_since_.emplace(it->second.progress.uri, clock_->Now());
            }
            // Replicas held for the run id: retry often, so that they start soon after the
            // server answers (the hold's bound, not the backoff, limits their wait).
            held_now = it->second.progress.run_id.empty() &&
                       it->second.hold_since != absl::InfinitePast() &&
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
