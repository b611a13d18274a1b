#include "operator/core/controller.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/defaults.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/core/checkpoint_notice.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/reconciler.h"

namespace coach::core {
namespace {

const char* RequeueName(PassResult::Requeue requeue) {
  switch (requeue) {
    case PassResult::Requeue::kNo:
      return "no";
    case PassResult::Requeue::kApplied:
      return "applied";
    case PassResult::Requeue::kRefusedCreate:
      return "refused_create";
    case PassResult::Requeue::kConflict:
      return "conflict";
  }
  return "unknown";
}

const char* WakeName(PassResult::Wake wake) {
  switch (wake) {
    case PassResult::Wake::kNo:
      return "no";
    case PassResult::Wake::kRequeueAt:
      return "requeue_at";
    case PassResult::Wake::kHeld:
      return "held";
  }
  return "unknown";
}

}  // namespace

std::string PassResult::ToString() const {
  std::string out = absl::StrCat("requeue=", RequeueName(requeue), " wake=", WakeName(wake));
  if (wake != Wake::kNo) absl::StrAppend(&out, "@", absl::FormatTime(at));
  return out;
}

Controller::Controller(JobStore* store, backend::Backend* backend, JobService* jobs,
                       WatchBroadcaster* watchers, KeyedMutex* job_locks, Clock* clock,
                       metrics::OperatorMetrics* metrics, Options options)
    : store_(store),
      backend_(backend),
      jobs_(jobs),
      watchers_(watchers),
      job_locks_(job_locks),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics, options_.forget_finished_jobs),
      queue_(clock, options_.queue) {
  jobs_->SetEnqueue([this](const JobKey& key) { Enqueue(key); });
  jobs_->SetDeleted([this](const model::Job& job) { metrics_.JobDeleted(job); });
}

Controller::~Controller() {
  Stop();
  jobs_->SetEnqueue(nullptr);
  jobs_->SetDeleted(nullptr);
}

absl::Status Controller::Start() {
  // The backends know a job by its name label only: a key without a kind.
  backend_->SetChangeCallback([this](const std::string& ns, const std::string& name) {
    Enqueue({ns, name, ""});
  });
  RETURN_IF_ERROR(backend_->Start());
  metrics_.BackendUp(true);
  // Resume every stored job.
  store::ListOptions options;
  options.page_size = 1000;
  int resumed = 0;
  do {
    absl::StatusOr<store::ListResult> page = store_->List(options);
    if (!page.ok()) {
      backend_->Stop();
      return page.status();
    }
    for (const auto& job : page->jobs) {
      const JobKey key = store::KeyOf(job);
      if (options_.forget_finished_jobs && reconcile::IsFinished(job.status())) {
        // Counted as its stored status says, as every finished job without an entry is (its
        // pass below finds no entry and takes that back off); its kind is not indexed.
        metrics_.CountStored(job.status());
      } else {
        RememberKey(key);
      }
      queue_.Add(key);
      ++resumed;
    }
    options.page_token = page->next_page_token;
  } while (!options.page_token.empty());
  metrics_.PublishTotals();
  spdlog::info("controller: {} stored job(s) to resume, {} worker(s), backend {}", resumed,
               options_.workers, backend_->Name());
  {
    absl::MutexLock lock(&mu_);
    running_ = true;
  }
  UpdateQueueGauges();
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  return absl::OkStatus();
}

void Controller::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  queue_.ShutDown();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  bool was_running;
  {
    absl::MutexLock lock(&mu_);
    was_running = running_;
    running_ = false;
  }
  if (was_running) {
    backend_->Stop();
    metrics_.BackendUp(false);
  }
}

bool Controller::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

Controller::PerJobEntries Controller::Entries() const {
  absl::MutexLock lock(&mu_);
  PerJobEntries entries;
  entries.admitted = admitted_.size();
  entries.kinds = kinds_.size();
  entries.gauges = metrics_.entries();
  entries.spec_checks = spec_checks_.size();
  entries.refused = refused_.size();
  return entries;
}

int64_t Controller::passes() const { return passes_.load(std::memory_order_relaxed); }

void Controller::Enqueue(const JobKey& key) {
  if (key.kind.empty()) {
    // Every kind of that name. None known: the job has not been told of yet, and its first
    // pass observes everything anyway; or, with forget_finished_jobs, it may be a finished
    // job, which is not indexed: the store (names unique across kinds there) says its kind.
    std::set<std::string> kinds;
    {
      absl::MutexLock lock(&mu_);
      auto it = kinds_.find(key);
      if (it != kinds_.end()) kinds = it->second;
    }
    for (const std::string& kind : kinds) queue_.Add({key.namespace_, key.name, kind});
    if (kinds.empty() && options_.forget_finished_jobs) {
      absl::StatusOr<model::Job> job = store_->GetCached(key);
      if (job.ok()) {
        queue_.Add(store::KeyOf(*job));
      } else if (!absl::IsNotFound(job.status())) {
        spdlog::warn("job {}: a change not reconciled (its kind not read: {})", KeyString(key),
                     job.status().ToString());
      }
    }
  } else {
    RememberKey(key);
    queue_.Add(key);
  }
  UpdateQueueGauges();
}

void Controller::RememberKey(const JobKey& key) {
  if (key.kind.empty()) return;
  absl::MutexLock lock(&mu_);
  kinds_[store::WithoutKind(key)].insert(key.kind);
}

void Controller::ForgetKey(const JobKey& key) {
  absl::MutexLock lock(&mu_);
  auto it = kinds_.find(store::WithoutKind(key));
  if (it == kinds_.end()) return;
  it->second.erase(key.kind);
  if (it->second.empty()) kinds_.erase(it);
}

void Controller::UpdateQueueGauges() {
  if (!metrics_.enabled()) return;
  metrics_.QueueSize(queue_.Depth(), queue_.DelayedCount());
}

void Controller::Worker() {
  while (std::optional<JobKey> key = queue_.Get()) {
    UpdateQueueGauges();
    const absl::Duration start = clock_->Monotonic();
    const absl::StatusOr<PassResult> result = ReconcileKey(*key);
    metrics_.PassTimed(clock_->Monotonic() - start, result.ok());
    ApplyToQueue(*key, result);
    queue_.Done(*key);
    UpdateQueueGauges();
  }
}

void Controller::ApplyToQueue(const JobKey& key, const absl::StatusOr<PassResult>& result) {
  if (!result.ok()) {
    const absl::Duration delay = queue_.AddRateLimited(key);
    spdlog::warn("reconcile {}: {} (retry in {})", KeyString(key), result.status().ToString(),
                 absl::FormatDuration(delay));
    return;
  }
  queue_.Forget(key);
  if (result->requeue != PassResult::Requeue::kNo) queue_.Add(key);
  if (result->wake != PassResult::Wake::kNo) queue_.AddAt(key, result->at);
}

void Controller::ForgetChecks(const JobKey& key) {
  admitted_.erase(key);
  spec_checks_.erase(key);
  refused_.erase(key);
}

std::string Controller::RefusalOf(const JobKey& key, const model::Job& job) {
  const int64_t generation = job.metadata().generation();
  {
    absl::MutexLock l(&mu_);
    auto refused = refused_.find(key);
    if (refused != refused_.end()) return refused->second;
    auto checked = spec_checks_.find(key);
    if (checked != spec_checks_.end() && checked->second.generation == generation) {
      return checked->second.problem;
    }
  }
  // Once per generation: a pass over a job whose spec did not change re-validates nothing.
  api::v1::TrainingJob defaulted = job;
  api::v1::SetDefaults(&defaulted);
  const absl::Status checked = CheckJobSpec(defaulted, options_.config.mlflow);
  std::string problem = checked.ok() ? "" : std::string(checked.message());
  if (!problem.empty()) spdlog::warn("job {}: refused: {}", KeyString(key), problem);
  absl::MutexLock l(&mu_);
  spec_checks_[key] = {generation, problem};
  return problem;
}

std::string Controller::RecordRefusedCreates(const JobKey& job_key, const model::Job& job,
                                             const std::vector<model::Action>& batch,
                                             const std::vector<absl::Status>& results,
                                             absl::Time now) {
  std::vector<store::JobEvent> events;
  std::string refusal;
  for (size_t i = 0; i < batch.size() && i < results.size(); ++i) {
    const absl::Status& result = results[i];
    if (batch[i].type != model::Action::Type::kCreate || result.ok()) continue;
    // Invalid: the object as written can never be created. Forbidden: RBAC or a quota,
    // which can change, so the pass is retried (upstream retries both forever).
    const bool invalid = absl::IsInvalidArgument(result);
    if (!invalid && !absl::IsPermissionDenied(result)) continue;
    const model::KubeObject& object = batch[i].object;
    const std::string message =
        absl::StrCat("Error creating ", object.kind, " ", object.name, ": ", result.message());
    events.push_back({"Warning", absl::StrCat("FailedCreate", object.kind), message, now});
    if (invalid && refusal.empty()) refusal = message;
  }
  if (!events.empty()) {
    absl::Status appended = store_->AppendEvents(job_key, events);
    if (!appended.ok()) {
      spdlog::warn("job {}/{}: {} event(s) not stored: {}", job.metadata().namespace_(),
                   job.metadata().name(), events.size(), appended.ToString());
    }
  }
  return refusal;
}

absl::StatusOr<PassResult> Controller::ReconcileKey(const JobKey& key) {
  KeyLock lock(job_locks_, KeyString(key));
  PassRecord record;
  absl::StatusOr<PassResult> result = Pass(key, &record);
  metrics_.RecordPass(key, record);
  return result;
}

absl::StatusOr<PassResult> Controller::Pass(const JobKey& key, PassRecord* record) {
  const JobKey& job_key = key;
  absl::StatusOr<model::Job> got = store_->GetCached(job_key);
  passes_.fetch_add(1, std::memory_order_relaxed);
  if (absl::IsNotFound(got.status())) {
    {
      absl::MutexLock l(&mu_);
      ForgetChecks(key);
    }
    ForgetKey(key);
    record->gauge = PassRecord::Gauge::kGone;
    return PassResult::Done();
  }
  if (!got.ok()) return got.status();
  model::Job job = std::move(got).value();
  const bool finished = reconcile::IsFinished(job.status());
  // Again here: a pass that found the job gone may have forgotten a key enqueued meanwhile.
  // Not a finished job's with forget_finished_jobs: the index keeps unfinished jobs only.
  if (!finished || !options_.forget_finished_jobs) RememberKey(key);
  // What the gauges count this job as while it has no entry (ControllerMetrics).
  if (finished && options_.forget_finished_jobs) record->counted_as = StoredGauge(job.status());

  const std::string refusal = finished ? "" : RefusalOf(key, job);
  if (finished) {
    // A finished job needs nothing prepared or checked (RefusalOf is for unfinished jobs), and
    // is not remembered as admitted: a store of thousands of finished jobs would otherwise
    // hold entries for each.
    absl::MutexLock l(&mu_);
    ForgetChecks(key);
  } else {
    bool admitted;
    {
      absl::MutexLock l(&mu_);
      admitted = admitted_.count(key) > 0;
    }
    if (!admitted) {
      // The first pass in this process: after a restart the backend re-prepares the job
      // (Admit is idempotent). Nor one that is about to fail as refused.
      if (refusal.empty()) RETURN_IF_ERROR(backend_->Admit(job));
      absl::MutexLock l(&mu_);
      admitted_.insert(key);
    }
  }

  model::ReconcileConfig config = options_.config;
  if (std::shared_ptr<const model::AddressPlan> plan = backend_->AddressPlanFor(job)) {
    config.address_plan = std::move(plan);
  }
  ASSIGN_OR_RETURN(model::ObservedState observed, backend_->Observe(job));
  observed.refused = refusal;
  backend::CheckpointChannel* const checkpoints = checkpoints_.load();
  if (checkpoints != nullptr) {
    config.checkpoint_on_notice = true;
    observed.checkpoint = ObservedCheckpointOf(*checkpoints, job.metadata().uid());
  }
  const int attempt_before = job.status().coach().attempt();
  const absl::Time now = clock_->Now();
  if (options_.observer != nullptr && observed.pods.empty() && refusal.empty() &&
      !reconcile::IsFinished(job.status())) {
    // A moment for the observer to make what the replicas' environment carries (the job's
    // MLflow run); bounded by the observer, which changes the job and so enqueues it.
    if (std::optional<absl::Time> hold = options_.observer->HoldStartUntil(job);
        hold.has_value() && now < *hold) {
      return PassResult::HeldUntil(*hold);
    }
  }
  model::ReconcileResult result = reconcile::Reconcile(job, observed, now, config);

  // Everything before a kDeleteJob (the reconciler emits it alone) goes to the backend in
  // one batch, which may apply it in parallel (the kube backend creates pods concurrently).
  std::vector<model::Action> batch;
  const model::Action* delete_job = nullptr;
  for (const model::Action& action : result.actions) {
    if (action.type == model::Action::Type::kDeleteJob) {
      delete_job = &action;
      break;
    }
    batch.push_back(action);
  }
  bool applied_any = false;
  if (!batch.empty()) {
    if (options_.observer != nullptr) NotePodsDeleting(job, observed, batch);
    std::vector<absl::Status> results;
    absl::Status applied = backend_->ApplyAll(job, batch, &results);
    for (size_t i = 0; i < batch.size() && i < results.size(); ++i) {
      if (absl::IsCancelled(results[i]) && !applied.ok()) continue;  // never attempted
      record->actions.emplace_back(batch[i].type, results[i].ok());
    }
    if (!applied.ok()) {
      const std::string refused = RecordRefusedCreates(job_key, job, batch, results, now);
      if (refused.empty()) return applied;
      {
        absl::MutexLock l(&mu_);
        refused_[key] = refused;
      }
      // The next pass fails the job with the refusal.
      return PassResult::Again(PassResult::Requeue::kRefusedCreate);
    }
    applied_any = true;
  }
  if (delete_job != nullptr) {
    absl::Status deleted = jobs_->DeleteLocked(job);
    record->actions.emplace_back(delete_job->type, deleted.ok());
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
    // DeleteLocked told ControllerMetrics::JobDeleted, which took the job off the gauges.
    record->TtlDeleted(job);
    spdlog::info("job {}: ttlSecondsAfterFinished expired, deleted", KeyString(key));
    {
      absl::MutexLock l(&mu_);
      ForgetChecks(key);
    }
    ForgetKey(key);
    return PassResult::Done();
  }

  if (result.status_changed) {
    model::Job updated = job;
    *updated.mutable_status() = result.status;
    absl::StatusOr<model::Job> written = store_->UpdateStatus(updated);
    if (absl::IsAborted(written.status())) {
      // Someone changed the job meanwhile (Suspend, Resume): start over from the store.
      return PassResult::Again(PassResult::Requeue::kConflict);
    }
    if (!written.ok()) return written.status();
    record->Transitions(job, job.status(), written->status());
    watchers_->Publish(WatchEventType::kModified, *written);
    job = std::move(written).value();
  }
  backend_->DirectLaunchers(job, result.launch);
  if (checkpoints != nullptr) {
    AskForCheckpoint(*checkpoints, job, result, observed.checkpoint.has_value(), attempt_before);
  }
  std::vector<store::JobEvent> events;
  for (const model::JobEventRecord& event : result.events) {
    events.push_back({event.type, event.reason, event.message, now});
  }
  // One write for the pass's events (a 4-replica job's first pass has 8).
  absl::Status appended = store_->AppendEvents(job_key, events);
  if (!appended.ok()) {
    spdlog::warn("job {}: {} event(s) not stored: {}", KeyString(key), events.size(),
                 appended.ToString());
  }
  if (reconcile::IsFinished(job.status())) {
    // Finished in this pass: what RefusalOf kept for it is not needed any more.
    {
      absl::MutexLock l(&mu_);
      ForgetChecks(key);
    }
    if (options_.forget_finished_jobs) ForgetKey(key);
  }
  record->Observed(observed, job.status());
  if (options_.observer != nullptr) options_.observer->JobSeen(job);
  PassResult pass;
  if (applied_any) pass.requeue = PassResult::Requeue::kApplied;
  if (result.requeue_at.has_value()) {
    pass.wake = PassResult::Wake::kRequeueAt;
    pass.at = *result.requeue_at;
  }
  return pass;
}

void Controller::NotePodsDeleting(const model::Job& job, const model::ObservedState& observed,
                                  const std::vector<model::Action>& batch) {
  std::vector<model::ObservedPod> deleting;
  for (const model::Action& action : batch) {
    if (action.type != model::Action::Type::kDelete || action.object.kind != "Pod") continue;
    for (const model::ObservedPod& pod : observed.pods) {
      // A pod that never ran has no log, and a lost node's kubelet would not answer.
      if (pod.name != action.object.name || pod.node.empty() || pod.node_lost) continue;
      deleting.push_back(pod);
    }
  }
  if (!deleting.empty()) options_.observer->PodsDeleting(job, deleting);
}

}  // namespace coach::core
