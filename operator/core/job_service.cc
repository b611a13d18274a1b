#include "operator/core/job_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/defaults.h"
#include "api/v1/kinds.h"
#include "api/v1/validation.h"
#include "common/status_macros.h"
#include "operator/core/label_selector.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/karpenter_placement.h"
#include "operator/reconcile/launcher_wrap.h"
#include "operator/reconcile/master_wait.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/reconcile/pending.h"
#include "operator/reconcile/recovery_policy.h"
#include "operator/reconcile/train_job_plan.h"

namespace coach::core {

absl::Status CheckJobSpec(const api::v1::TrainingJob& defaulted,
                          const model::MlflowConfig& mlflow) {
  // A stored record that no manifest could have produced (one admitted before structured jobs
  // were recoded) fails here, visibly, instead of confusing the reconciler.
  RETURN_IF_ERROR(api::v1::codec::RecodeJob(defaulted).status());
  RETURN_IF_ERROR(api::v1::ValidateJob(defaulted));
  RETURN_IF_ERROR(reconcile::ValidateMlflowAnnotations(defaulted, mlflow));
  RETURN_IF_ERROR(reconcile::ValidateLauncherAnnotation(defaulted));
  RETURN_IF_ERROR(reconcile::ValidateWaitForMasterAnnotation(defaulted));
  RETURN_IF_ERROR(reconcile::ValidateKarpenterAnnotations(defaulted));
  RETURN_IF_ERROR(reconcile::ValidateRecoveryAnnotations(defaulted));
  return absl::OkStatus();
}

std::string FrameworkOf(const api::v1::TrainingJob& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return info == nullptr ? "unknown" : std::string(info->framework);
}

JobService::JobService(JobStore* store, backend::Backend* backend, WatchBroadcaster* watchers,
                       KeyedMutex* job_locks, metrics::OperatorMetrics* metrics, Options options)
    : store_(store),
      backend_(backend),
      watchers_(watchers),
      job_locks_(job_locks),
      metrics_(metrics),
      options_(options) {}

void JobService::SetEnqueue(std::function<void(const JobKey&)> enqueue) {
  enqueue_ = std::move(enqueue);
}

void JobService::SetDeleted(std::function<void(const api::v1::TrainingJob&)> deleted) {
  deleted_ = std::move(deleted);
}

void JobService::Enqueue(const JobKey& key) {
  if (enqueue_) enqueue_(key);
}

absl::StatusOr<api::v1::TrainingJob> JobService::Admission(const CreateRequest& request) const {
  api::v1::TrainingJob job;
  if (request.job.has_value() && !request.manifest.empty()) {
    return absl::InvalidArgumentError("give either a job or a manifest, not both");
  }
  if (request.job.has_value()) {
    // Read as its manifest would be: the decoder's rules, limits and messages, not a second
    // set of checks that could drift from them.
    absl::StatusOr<api::v1::TrainingJob> recoded = api::v1::codec::RecodeJob(*request.job);
    if (!recoded.ok()) return recoded.status();
    job = *std::move(recoded);
  } else if (!request.manifest.empty()) {
    absl::StatusOr<std::vector<api::v1::TrainingJob>> jobs =
        api::v1::codec::ParseManifests(request.manifest);
    if (!jobs.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("manifest: ", jobs.status().message()));
    }
    if (jobs->size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest: holds ", jobs->size(), " jobs; CreateJob takes exactly one"));
    }
    job = std::move(jobs->front());
  } else {
    return absl::InvalidArgumentError("a job or a manifest is required");
  }
  // What a client says about status or server-assigned metadata is not its to say.
  job.clear_status();
  job.mutable_metadata()->clear_uid();
  job.mutable_metadata()->clear_resource_version();
  job.mutable_metadata()->clear_generation();
  job.mutable_metadata()->clear_creation_timestamp();
  job.mutable_metadata()->clear_deletion_timestamp();
  if (job.metadata().namespace_().empty()) {
    job.mutable_metadata()->set_namespace_(request.namespace_.empty() ? "default"
                                                                      : request.namespace_);
  }
  // The run and experiment ids are the operator's to write (mlflow_env.h).
  reconcile::ClearOperatorMlflowAnnotations(&job);
  api::v1::SetDefaults(&job);
  RETURN_IF_ERROR(CheckJobSpec(job, options_.mlflow));
  if (job.kind() == api::v1::TRAIN_JOB) {
    // Upstream's webhooks, the defaulter's then the validator's, against the runtime the backend
    // would build the job from (none: the validator's "must be created before the TrainJob").
    RETURN_IF_ERROR(reconcile::DefaultTrainJob(&job, options_.clock->Now()));
    ASSIGN_OR_RETURN(model::ObservedState observed, backend_->Observe(job));
    // A runtime the backend found but upstream's runtime webhook would have refused.
    if (!observed.refused.empty()) return absl::InvalidArgumentError(observed.refused);
    RETURN_IF_ERROR(reconcile::AdmitTrainJob(job, observed));
  }
  return job;
}

absl::StatusOr<api::v1::TrainingJob> JobService::Create(const CreateRequest& request) {
  absl::StatusOr<api::v1::TrainingJob> admitted = Admission(request);
  if (!admitted.ok()) {
    if (metrics_ != nullptr) metrics_->admission_rejected->Add({"invalid"});
    return admitted.status();
  }
  if (request.dry_run) return admitted;

  const JobKey key = store::KeyOf(*admitted);
  absl::StatusOr<api::v1::TrainingJob> stored;
  {
    KeyLock lock(job_locks_, KeyString(key));
    stored = store_->Create(*admitted);
    if (!stored.ok()) {
      if (metrics_ != nullptr && absl::IsAlreadyExists(stored.status())) {
        metrics_->admission_rejected->Add({"already_exists"});
      }
      return stored.status();
    }
    if (absl::Status admit = backend_->Admit(*stored); !admit.ok()) {
      // Nothing half-accepted: whatever Admit may have reserved is released with the job.
      backend_->Forget(*stored).IgnoreError();
      if (absl::Status del = store_->Delete(key, std::nullopt);
          !del.ok() && !absl::IsNotFound(del)) {
        return absl::InternalError(absl::StrCat("the backend refused the job (", admit.message(),
                                                ") and removing it again failed: ", del.message()));
      }
      if (metrics_ != nullptr) {
        metrics_->admission_rejected->Add(
            {absl::IsResourceExhausted(admit) ? "resource_exhausted" : "backend_error"});
      }
      return admit;
    }
  }
  if (metrics_ != nullptr) {
    metrics_->jobs_created->Add({key.namespace_, FrameworkOf(*stored)});
  }
  watchers_->Publish(WatchEventType::kAdded, *stored);
  Enqueue(key);
  return stored;
}

absl::StatusOr<api::v1::TrainingJob> JobService::Get(const std::string& ns,
                                                     const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name: required");
  return store_->Get({ns.empty() ? "default" : ns, name});
}

absl::StatusOr<ListResponse> JobService::List(const ListRequest& request) {
  ASSIGN_OR_RETURN(LabelSelector selector, LabelSelector::Parse(request.label_selector));
  if (request.page_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must be >= 0, got ", request.page_size));
  }
  store::ListOptions options;
  options.namespace_ = request.namespace_;
  options.page_size = request.page_size == 0 ? options_.default_page_size
                                             : std::min(request.page_size, options_.max_page_size);
  options.page_token = request.page_token;
  options.label_selector = selector.Equalities();
  absl::StatusOr<store::ListResult> result = store_->List(options);
  if (!result.ok()) {
    if (absl::IsInvalidArgument(result.status())) {
      return absl::InvalidArgumentError(absl::StrCat("page_token: ", result.status().message()));
    }
    return result.status();
  }
  ListResponse response;
  response.next_page_token = result->next_page_token;
  // The store filters equalities; the rest is filtered here, so a page may hold fewer
  // than page_size jobs (as Kubernetes allows) but never skips one.
  for (auto& job : result->jobs) {
    if (selector.MatchesMap(job.metadata().labels())) response.jobs.push_back(std::move(job));
  }
  return response;
}

absl::Status JobService::DeleteLocked(const api::v1::TrainingJob& job) {
  if (observer_ != nullptr) observer_->JobDeleting(job);
  RETURN_IF_ERROR(backend_->Forget(job));
  // The job's own key: on the kube backend a plain name taken by two kinds names neither.
  absl::Status deleted = store_->Delete(store::KeyOf(job), std::nullopt);
  if (!deleted.ok()) return deleted;
  if (deleted_) deleted_(job);
  if (metrics_ != nullptr) {
    metrics_->jobs_deleted->Add({job.metadata().namespace_(), FrameworkOf(job)});
  }
  watchers_->Publish(WatchEventType::kDeleted, job);
  return absl::OkStatus();
}

absl::Status JobService::Delete(const std::string& ns, const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name: required");
  // The lock the controller takes is the key with the kind: learn the kind first.
  ASSIGN_OR_RETURN(api::v1::TrainingJob found, store_->Get({ns.empty() ? "default" : ns, name}));
  const JobKey key = store::KeyOf(found);
  {
    KeyLock lock(job_locks_, KeyString(key));
    ASSIGN_OR_RETURN(api::v1::TrainingJob job, store_->Get(key));
    RETURN_IF_ERROR(DeleteLocked(job));
  }
  // The controller sees NotFound and drops what it tracked for the job.
  Enqueue(key);
  return absl::OkStatus();
}

absl::StatusOr<api::v1::TrainingJob> JobService::SetSuspend(const std::string& ns,
                                                            const std::string& name, bool suspend) {
  if (name.empty()) return absl::InvalidArgumentError("name: required");
  const JobKey key{ns.empty() ? "default" : ns, name};
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(api::v1::TrainingJob job, store_->Get(key));
    if (reconcile::IsFinished(job.status())) {
      return absl::FailedPreconditionError(absl::StrCat("job ", KeyString(key),
                                                        " has finished; it cannot be ",
                                                        suspend ? "suspended" : "resumed"));
    }
    const api::v1::RunPolicy& rp = job.spec().run_policy();
    const bool now_suspended = rp.has_suspend() && rp.suspend();
    if (now_suspended == suspend) return job;
    job.mutable_spec()->mutable_run_policy()->set_suspend(suspend);
    absl::StatusOr<api::v1::TrainingJob> updated = store_->Update(job);
    if (absl::IsAborted(updated.status()) && attempt < options_.conflict_retries) continue;
    if (!updated.ok()) return updated.status();
    watchers_->Publish(WatchEventType::kModified, *updated);
    Enqueue(store::KeyOf(*updated));
    return updated;
  }
}

absl::StatusOr<api::v1::TrainingJob> JobService::Suspend(const std::string& ns,
                                                         const std::string& name) {
  return SetSuspend(ns, name, true);
}

absl::StatusOr<api::v1::TrainingJob> JobService::Resume(const std::string& ns,
                                                        const std::string& name) {
  return SetSuspend(ns, name, false);
}

absl::StatusOr<JobDescription> JobService::Describe(const std::string& ns,
                                                    const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("name: required");
  const JobKey key{ns.empty() ? "default" : ns, name};
  JobDescription description;
  ASSIGN_OR_RETURN(description.job, store_->Get(key));
  ASSIGN_OR_RETURN(model::ObservedState observed, backend_->Observe(description.job));
  for (const model::ObservedPod& pod : observed.pods) {
    ReplicaInfo info;
    info.name = pod.name;
    info.replica_type = pod.replica_type;
    info.index = pod.index;
    info.phase = model::PodPhaseName(pod.phase);
    info.restarts = pod.restart_count;
    info.exit_code = pod.exit_code;
    // A Pending replica without a message of its own says why it waits (pending.h).
    info.message = pod.message.empty() ? reconcile::WaitingText(pod.waiting) : pod.message;
    description.replicas.push_back(std::move(info));
  }
  std::sort(description.replicas.begin(), description.replicas.end(),
            [](const ReplicaInfo& a, const ReplicaInfo& b) { return a.name < b.name; });
  ASSIGN_OR_RETURN(description.events, store_->ListEvents(key));
  return description;
}

absl::Status JobService::Logs(const std::string& ns, const std::string& name,
                              const backend::LogOptions& options, const backend::LogSink& sink,
                              const std::atomic<bool>& cancelled) {
  LogRequest request;
  request.options = options;
  return Logs(
      ns, name, request,
      [&](const std::string& replica, const std::string& data, const std::string&, int) {
        return sink(replica, data);
      },
      cancelled);
}

namespace {

// The last `lines` lines of `text` (0: all).
std::string TailLines(const std::string& text, int64_t lines) {
  if (lines <= 0) return text;
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  for (int64_t n = 0; n < lines; ++n) {
    const size_t nl = pos == 0 ? std::string::npos : text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos + 1);
}

}  // namespace

absl::Status JobService::Logs(const std::string& ns_in, const std::string& name,
                              const LogRequest& request, const SourcedLogSink& sink,
                              const std::atomic<bool>& cancelled) {
  const backend::LogOptions& options = request.options;
  if (name.empty()) return absl::InvalidArgumentError("name: required");
  if (options.tail_lines < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tail_lines: must be >= 0, got ", options.tail_lines));
  }
  if (options.attempt && (*options.attempt < 0 || *options.attempt > 1000000)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt: must be 0 to 1000000, got ", *options.attempt));
  }
  const std::string ns = ns_in.empty() ? "default" : ns_in;
  auto send_kept = [&](const api::v1::TrainingJob& job, int attempt) -> absl::Status {
    if (history_ == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          "no log of attempt ", attempt, " of ", ns, "/", name,
          " is kept: this operator keeps earlier attempts' logs only in a history store or the "
          "job's MLflow run (docs/history.md)"));
    }
    ASSIGN_OR_RETURN(std::vector<history::LogKeeper::KeptLog> kept,
                     history_->Read(job, attempt, options.replica));
    for (const history::LogKeeper::KeptLog& log : kept) {
      if (cancelled.load()) return absl::CancelledError("cancelled");
      if (!sink(log.replica, TailLines(log.text, options.tail_lines), log.source, attempt)) break;
    }
    return absl::OkStatus();
  };
  if (!request.uid.empty()) {
    if (history_ == nullptr) {
      return absl::FailedPreconditionError(
          "uid: this operator keeps no history of deleted jobs (docs/history.md)");
    }
    ASSIGN_OR_RETURN(api::v1::JobHistory record, history_->DeletedRecord(ns, name, request.uid));
    return send_kept(record.job(),
                     options.attempt.value_or(record.job().status().coach().attempt()));
  }
  ASSIGN_OR_RETURN(api::v1::TrainingJob job, store_->Get({ns, name}));
  const int current = job.status().coach().attempt();
  const int attempt = options.attempt.value_or(current);
  if (attempt > current) {
    return absl::NotFoundError(absl::StrCat("attempt: ", ns, "/", name, " has no attempt ", attempt,
                                            " (it is at attempt ", current, ")"));
  }
  bool sent = false;
  backend::LogOptions backend_options = options;
  backend_options.attempt = attempt == current ? std::nullopt : std::optional<int>(attempt);
  const std::string source = attempt == current ? "live" : "kept/local";
  absl::Status streamed = backend_->StreamLogs(
      job, backend_options,
      [&](const std::string& replica, const std::string& data) {
        sent = true;
        return sink(replica, data, source, attempt);
      },
      cancelled);
  // The pods are gone (a restart, cleanPodPolicy) or the backend keeps no earlier attempts:
  // what was kept elsewhere answers.
  const bool pods_gone =
      absl::IsNotFound(streamed) || (streamed.ok() && !sent && reconcile::IsFinished(job.status()));
  if (!pods_gone || sent) return streamed;
  absl::Status kept = send_kept(job, attempt);
  return absl::IsNotFound(kept) && !streamed.ok() ? streamed : kept;
}

absl::StatusOr<std::vector<api::v1::JobHistory>> JobService::Histories(const std::string& ns,
                                                                       const std::string& name,
                                                                       int page_size,
                                                                       bool* truncated) {
  if (page_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: must be >= 0, got ", page_size));
  }
  if (history_ == nullptr) {
    return absl::FailedPreconditionError(
        "this operator keeps no history of deleted jobs: it has no history store "
        "(docs/history.md)");
  }
  const int size =
      page_size == 0 ? options_.default_page_size : std::min(page_size, options_.max_page_size);
  return history_->ListDeleted(ns, name, size, truncated);
}

absl::StatusOr<std::shared_ptr<Subscription>> JobService::Watch(const std::string& ns,
                                                                const std::string& name,
                                                                const std::string& label_selector) {
  WatchFilter filter;
  filter.namespace_ = ns;
  filter.name = name;
  ASSIGN_OR_RETURN(filter.selector, LabelSelector::Parse(label_selector));
  const std::map<std::string, std::string> equalities = filter.selector.Equalities();
  return watchers_->Subscribe(std::move(filter),
                              [&]() -> absl::StatusOr<std::vector<api::v1::TrainingJob>> {
                                std::vector<api::v1::TrainingJob> all;
                                store::ListOptions options;
                                options.namespace_ = ns;
                                options.page_size = options_.max_page_size;
                                options.label_selector = equalities;
                                do {
                                  ASSIGN_OR_RETURN(store::ListResult page, store_->List(options));
                                  for (auto& job : page.jobs) all.push_back(std::move(job));
                                  options.page_token = page.next_page_token;
                                } while (!options.page_token.empty());
                                return all;
                              });
}

}  // namespace coach::core
