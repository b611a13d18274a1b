#include "operator/core/controller.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/defaults.h"
#include "api/v1/job_conditions.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/reconciler.h"

namespace coach::core {
namespace {

const char* ActionName(model::Action::Type type) {
  switch (type) {
    case model::Action::Type::kCreate:
      return "create";
    case model::Action::Type::kDelete:
      return "delete";
    case model::Action::Type::kDeleteJob:
      return "delete_job";
  }
  return "unknown";
}

// The gauge's states, in the order GaugeEntry::state indexes them.
constexpr std::array<const char*, 6> kStates = {api::v1::kJobCreated,    api::v1::kJobRunning,
                                                api::v1::kJobRestarting, api::v1::kJobSuspended,
                                                api::v1::kJobSucceeded,  api::v1::kJobFailed};
constexpr std::array<model::PodPhase, 5> kPhases = {
    model::PodPhase::kPending, model::PodPhase::kRunning, model::PodPhase::kSucceeded,
    model::PodPhase::kFailed, model::PodPhase::kUnknown};

uint8_t StateIndex(const std::string& state) {
  for (size_t i = 0; i < kStates.size(); ++i) {
    if (state == kStates[i]) return static_cast<uint8_t>(i);
  }
  return 0;  // JobState returns one of kStates
}

constexpr size_t PhaseIndex(model::PodPhase phase) { return static_cast<size_t>(phase); }

}  // namespace

JobGauge ObservedGauge(const model::ObservedState& observed, const model::JobStatus& status) {
  JobGauge gauge;
  for (const model::ObservedPod& pod : observed.pods) ++gauge.phases[PhaseIndex(pod.phase)];
  gauge.state = StateIndex(JobState(status));
  return gauge;
}

JobGauge StoredGauge(const model::JobStatus& status) {
  JobGauge gauge;
  for (const auto& [type, replicas] : status.replica_statuses()) {
    gauge.phases[PhaseIndex(model::PodPhase::kRunning)] += replicas.active();
    gauge.phases[PhaseIndex(model::PodPhase::kSucceeded)] += replicas.succeeded();
    gauge.phases[PhaseIndex(model::PodPhase::kFailed)] += replicas.failed();
  }
  gauge.state = StateIndex(JobState(status));
  return gauge;
}

std::string JobState(const model::JobStatus& status) {
  for (const char* state : {api::v1::kJobSucceeded, api::v1::kJobFailed, api::v1::kJobSuspended,
                            api::v1::kJobRestarting, api::v1::kJobRunning}) {
    if (reconcile::HasTrueCondition(status, state)) return state;
  }
  return api::v1::kJobCreated;
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
      metrics_(metrics),
      options_(std::move(options)),
      queue_(clock, options_.queue) {
  jobs_->SetEnqueue([this](const JobKey& key) { Enqueue(key); });
  jobs_->SetDeleted([this](const model::Job& job) { JobDeleted(job); });
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
  if (metrics_ != nullptr) metrics_->backend_up->Set({}, 1);
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
        if (metrics_ != nullptr) {
          absl::MutexLock lock(&mu_);
          AddToTotals(StoredGauge(job.status()), 1);
        }
      } else {
        RememberKey(key);
      }
      queue_.Add(key);
      ++resumed;
    }
    options.page_token = page->next_page_token;
  } while (!options.page_token.empty());
  if (metrics_ != nullptr) {
    absl::MutexLock lock(&mu_);
    PublishTotals();
  }
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
    if (metrics_ != nullptr) metrics_->backend_up->Set({}, 0);
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
  entries.gauges = gauges_.size();
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
  if (metrics_ == nullptr) return;
  metrics_->workqueue_depth->Set({}, static_cast<double>(queue_.Depth()));
  metrics_->workqueue_delayed->Set({}, static_cast<double>(queue_.DelayedCount()));
}

void Controller::Worker() {
  while (std::optional<JobKey> key = queue_.Get()) {
    UpdateQueueGauges();
    const absl::Time start = clock_->Now();  // a duration metric, not logic time
    absl::Status status = ReconcileKey(*key);
    if (metrics_ != nullptr) {
      metrics_->reconcile_duration->Observe({}, absl::ToDoubleSeconds(clock_->Now() - start));
      metrics_->reconcile_total->Add({status.ok() ? "ok" : "error"});
    }
    if (status.ok()) {
      queue_.Forget(*key);
    } else {
      const absl::Duration delay = queue_.AddRateLimited(*key);
      spdlog::warn("reconcile {}: {} (retry in {})", KeyString(*key), status.ToString(),
                   absl::FormatDuration(delay));
    }
    queue_.Done(*key);
    UpdateQueueGauges();
  }
}

void Controller::AddToTotals(const JobGauge& gauge, int sign) {
  for (size_t p = 0; p < gauge.phases.size(); ++p) phase_totals_[p] += sign * gauge.phases[p];
  state_totals_[gauge.state] += sign;
}

void Controller::PublishTotals() {
  for (model::PodPhase phase : kPhases) {
    metrics_->replicas->Set({model::PodPhaseName(phase)},
                            static_cast<double>(phase_totals_[PhaseIndex(phase)]));
  }
  for (size_t s = 0; s < kStates.size(); ++s) {
    metrics_->jobs->Set({kStates[s]}, static_cast<double>(state_totals_[s]));
  }
}

void Controller::RecordObserved(const JobKey& key, const JobGauge* counted_as,
                                const model::ObservedState* observed,
                                const model::JobStatus* after) {
  if (metrics_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  // The totals are kept as running sums, changed by this job's old and new counts: a pass
  // costs what its job holds, not what the store holds (summing every job here was
  // O(jobs) per pass). The old counts: the job's entry, or for a finished job without one,
  // what its status as the pass read it says (forget_finished_jobs; header comment).
  auto it = gauges_.find(key);
  if (it != gauges_.end()) {
    AddToTotals(it->second, -1);
  } else if (counted_as != nullptr) {
    AddToTotals(*counted_as, -1);
  }
  if (observed == nullptr) {
    if (it != gauges_.end()) gauges_.erase(it);
  } else {
    const JobGauge gauge = ObservedGauge(*observed, *after);
    AddToTotals(gauge, 1);
    if (options_.forget_finished_jobs && reconcile::IsFinished(*after) &&
        gauge == StoredGauge(*after)) {
      // From now on counted as its stored status says: no entry.
      if (it != gauges_.end()) gauges_.erase(it);
    } else if (it != gauges_.end()) {
      it->second = gauge;
    } else {
      gauges_.emplace(key, gauge);
    }
  }
  PublishTotals();
}

void Controller::JobDeleted(const model::Job& job) {
  if (metrics_ == nullptr) return;
  const JobKey key = store::KeyOf(job);
  absl::MutexLock lock(&mu_);
  // Taken off here, where the job as last stored is known: the pass that then finds it gone
  // could not say what a finished job without an entry was counted as.
  auto it = gauges_.find(key);
  if (it != gauges_.end()) {
    AddToTotals(it->second, -1);
    gauges_.erase(it);
  } else if (options_.forget_finished_jobs && reconcile::IsFinished(job.status())) {
    AddToTotals(StoredGauge(job.status()), -1);
  } else {
    return;
  }
  PublishTotals();
}

void Controller::ForgetChecks(const JobKey& key) {
  admitted_.erase(key);
  spec_checks_.erase(key);
  refused_.erase(key);
}

void Controller::CountTransitions(const model::Job& job, const model::JobStatus& before,
                                  const model::JobStatus& after) {
  if (metrics_ == nullptr) return;
  const metrics::LabelValues labels = {job.metadata().namespace_(), FrameworkOf(job)};
  auto turned_true = [&](const char* type) {
    return !reconcile::HasTrueCondition(before, type) && reconcile::HasTrueCondition(after, type);
  };
  if (turned_true(api::v1::kJobSucceeded)) metrics_->jobs_successful->Add(labels);
  if (turned_true(api::v1::kJobFailed)) metrics_->jobs_failed->Add(labels);
  if (turned_true(api::v1::kJobRestarting)) metrics_->jobs_restarted->Add(labels);
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

absl::Status Controller::ReconcileKey(const JobKey& key) {
  KeyLock lock(job_locks_, KeyString(key));
  const JobKey& job_key = key;
  absl::StatusOr<model::Job> got = store_->GetCached(job_key);
  passes_.fetch_add(1, std::memory_order_relaxed);
  if (absl::IsNotFound(got.status())) {
    {
      absl::MutexLock l(&mu_);
      ForgetChecks(key);
    }
    ForgetKey(key);
    RecordObserved(key, nullptr, nullptr, nullptr);
    return absl::OkStatus();
  }
  if (!got.ok()) return got.status();
  model::Job job = std::move(got).value();
  const bool finished = reconcile::IsFinished(job.status());
  // Again here: a pass that found the job gone may have forgotten a key enqueued meanwhile.
  // Not a finished job's with forget_finished_jobs: the index keeps unfinished jobs only.
  if (!finished || !options_.forget_finished_jobs) RememberKey(key);
  // What the gauges count this job as while it has no entry (RecordObserved).
  const std::optional<JobGauge> counted_as = finished && options_.forget_finished_jobs
                                                 ? std::optional(StoredGauge(job.status()))
                                                 : std::nullopt;

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
  const absl::Time now = clock_->Now();
  if (options_.observer != nullptr && observed.pods.empty() && refusal.empty() &&
      !reconcile::IsFinished(job.status())) {
    // A moment for the observer to make what the replicas' environment carries (the job's
    // MLflow run); bounded by the observer, which changes the job and so enqueues it.
    if (std::optional<absl::Time> hold = options_.observer->HoldStartUntil(job);
        hold.has_value() && now < *hold) {
      queue_.AddAt(key, *hold);
      return absl::OkStatus();
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
    std::vector<absl::Status> results;
    absl::Status applied = backend_->ApplyAll(job, batch, &results);
    if (metrics_ != nullptr) {
      for (size_t i = 0; i < batch.size() && i < results.size(); ++i) {
        if (absl::IsCancelled(results[i]) && !applied.ok()) continue;  // never attempted
        metrics_->actions_total->Add({ActionName(batch[i].type), results[i].ok() ? "ok" : "error"});
      }
    }
    if (!applied.ok()) {
      const std::string refused = RecordRefusedCreates(job_key, job, batch, results, now);
      if (refused.empty()) return applied;
      {
        absl::MutexLock l(&mu_);
        refused_[key] = refused;
      }
      queue_.Add(key);  // the next pass fails the job with the refusal
      return absl::OkStatus();
    }
    applied_any = true;
  }
  if (delete_job != nullptr) {
    absl::Status deleted = jobs_->DeleteLocked(job);
    if (metrics_ != nullptr) {
      metrics_->actions_total->Add({ActionName(delete_job->type), deleted.ok() ? "ok" : "error"});
    }
    if (!deleted.ok() && !absl::IsNotFound(deleted)) return deleted;
    if (metrics_ != nullptr) {
      metrics_->jobs_ttl_deleted->Add({job.metadata().namespace_(), FrameworkOf(job)});
    }
    spdlog::info("job {}: ttlSecondsAfterFinished expired, deleted", KeyString(key));
    {
      absl::MutexLock l(&mu_);
      ForgetChecks(key);
    }
    ForgetKey(key);
    // DeleteLocked told JobDeleted, which took the job off the gauges.
    RecordObserved(key, nullptr, nullptr, nullptr);
    return absl::OkStatus();
  }

  if (result.status_changed) {
    model::Job updated = job;
    *updated.mutable_status() = result.status;
    absl::StatusOr<model::Job> written = store_->UpdateStatus(updated);
    if (absl::IsAborted(written.status())) {
      // Someone changed the job meanwhile (Suspend, Resume): start over from the store.
      queue_.Add(key);
      return absl::OkStatus();
    }
    if (!written.ok()) return written.status();
    CountTransitions(job, job.status(), written->status());
    watchers_->Publish(WatchEventType::kModified, *written);
    job = std::move(written).value();
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
  RecordObserved(key, counted_as ? &*counted_as : nullptr, &observed, &job.status());
  if (options_.observer != nullptr) options_.observer->JobSeen(job);
  if (applied_any) queue_.Add(key);
  if (result.requeue_at.has_value()) queue_.AddAt(key, *result.requeue_at);
  return absl::OkStatus();
}

}  // namespace coach::core
