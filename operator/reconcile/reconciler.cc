#include "operator/reconcile/reconciler.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"
#include "operator/model/job_plan.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/attempt_history.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/elastic.h"
#include "operator/reconcile/interruption_cost.h"
#include "operator/reconcile/job_recovery.h"
#include "operator/reconcile/pass.h"
#include "operator/reconcile/pending.h"
#include "operator/reconcile/plan_job.h"
#include "operator/reconcile/queue_wait.h"
#include "operator/reconcile/recovery.h"
#include "operator/reconcile/recovery_policy.h"
#include "operator/reconcile/restart_rule.h"
#include "operator/reconcile/success_rule.h"

namespace coach::reconcile::pass_internal {

// Upstream's "no exit code seen" marker (0xbeef): >= 128, so retryable under ExitCode.
constexpr int kUnknownExitCode = 0xbeef;

void Pass::CountReplicas() {
  auto& statuses = *status().mutable_replica_statuses();
  std::map<std::string, std::string> old_label_selectors;
  for (const auto& [type, rs] : statuses) old_label_selectors[type] = rs.label_selector_json();
  statuses.clear();
  for (const std::string& type : ReplicaTypes(job_)) {
    api::v1::ReplicaStatus rs;
    rs.set_selector(ReplicaSelector(job_, type));
    rs.set_label_selector_json(old_label_selectors[type]);
    if (plan_.status_counts_replicas) rs.set_replicas(Replicas(job_, type));
    statuses[type] = rs;
  }
  for (const ObservedPod& observed : observed_.pods) {
    auto it = statuses.find(observed.replica_type);
    if (it == statuses.end() || recovery_.Stale(observed)) continue;
    const ObservedPod pod = recovery_.AsOfAttempt(observed);
    api::v1::ReplicaStatus& rs = it->second;
    switch (pod.phase) {
      case PodPhase::kRunning:
        // A Running pod that is being deleted is as good as failed (upstream).
        if (pod.deleting) {
          rs.set_failed(rs.failed() + 1);
        } else {
          rs.set_active(rs.active() + 1);
        }
        break;
      case PodPhase::kSucceeded:
        rs.set_succeeded(rs.succeeded() + 1);
        break;
      case PodPhase::kFailed:
        rs.set_failed(rs.failed() + 1);
        break;
      default:
        break;
    }
  }
}

void Pass::CountSucceededReplicas() {
  if (!HasTrueCondition(status(), kJobSucceeded)) return;
  for (auto& [type, rs] : *status().mutable_replica_statuses()) {
    rs.set_succeeded(rs.succeeded() + rs.active());
    rs.set_active(0);
  }
}

void Pass::Succeed(const std::string& message) {
  MarkSucceeded(status(), kind_name_, message, now_);
  Event("Normal", kind_name_ + api::v1::kJobSucceededReason, message);
  AttemptEnd end;
  end.reason = "Succeeded";
  CloseAttempt(end, message);
}

void Pass::NoteAttempt() {
  const bool cost_known = StepsLostKnown(status(), recovery_.attempt());
  NoteAttemptPods(job_, recovery_.current(), recovery_.attempt(), AttemptStart(),
                  AttemptRunningTime(status(), now_), status());
  if (cost_known) return;
  if (std::optional<std::string> cost = InterruptionCost(status(), recovery_.attempt())) {
    Event("Normal", kInterruptionCostReason, *cost);
  }
}

void Pass::CloseAttempt(AttemptEnd end, const std::string& message) {
  end.message = message;
  reconcile::CloseAttempt(job_, recovery_.current(), recovery_.attempt(), AttemptStart(), end, now_,
                          status());
}

void Pass::Fail(const std::string& reason, const std::string& message,
                const std::string& failed_type, AttemptEnd end) {
  Event("Warning", kind_name_ + reason, message);
  if (end.reason.empty()) {
    end = FailureEnd(reason, upstream_failure_, failed_type, recovery_.current());
  }
  CloseAttempt(end, message);
  if (plan_.words == model::StatusWords::kTrainingOperator) {
    MarkFailed(status(), kind_name_, reason, message, now_);
    return;
  }
  // JobSet's reasons are unprefixed; coach's own (a refused job, a stall) keep coach's words.
  if (reason == api::v1::kJobFailedValidationReason || reason == api::v1::kJobStalledReason) {
    MarkFailed(status(), "", reason, message, now_);
    return;
  }
  // JobSet's words (v0.12 constants); the event above keeps coach's detail.
  if (upstream_failure_ == api::v1::kTrainJobDeadlineReason) {
    MarkFailed(status(), "", upstream_failure_, api::v1::kTrainJobDeadlineMessage, now_);
  } else if (upstream_failure_ == api::v1::kTrainJobMaxRestartsReason) {
    MarkFailed(status(), "", upstream_failure_,
               "jobset failed due to reaching max number of restarts", now_);
  } else {
    const std::string& rjob = !failed_type.empty() ? failed_type : plan_.leading_type;
    MarkFailed(status(), "", api::v1::kTrainJobFailedJobsReason,
               absl::StrCat("jobset failed due to one or more job failures (first failed job: ",
                            name(), "-", rjob, "-0)"),
               now_);
  }
}

bool Pass::Reached(const std::string& type, const std::string& state) const {
  auto spec = job_.spec().replica_specs().find(type);
  if (spec == job_.spec().replica_specs().end()) return false;
  int reached = 0;
  for (const ObservedPod& p : recovery_.current()) {
    if (p.replica_type != type || p.deleting) continue;
    if (p.phase == PodPhase::kSucceeded || (state == "Ready" && p.phase == PodPhase::kRunning)) {
      ++reached;
    }
  }
  return reached >= spec->second.replicas();
}

bool Pass::DependenciesMet(const std::string& type) const {
  auto deps = plan_.depends_on.find(type);
  if (deps == plan_.depends_on.end()) return true;
  for (const model::PlannedDependency& dep : deps->second) {
    if (!Reached(dep.replica_type, dep.state)) return false;
  }
  return true;
}

// jobsStatus: one Job per replicated job, so each counter is 0 or 1.
void Pass::UpdateJobsStatus() {
  if (!plan_.reports_jobs_status) return;
  const bool suspended = job_.spec().run_policy().suspend();
  const bool failed = HasTrueCondition(status(), api::v1::kJobFailed);
  auto& out = *status().mutable_jobs_status();
  out.Clear();
  for (const std::string& rjob : plan_.replica_types) {
    api::v1::ReplicatedJobStatus& js = *out.Add();
    js.set_name(rjob);
    const int replicas = Replicas(job_, rjob);
    int succeeded = 0, running = 0, pending = 0, failed_pods = 0;
    for (const ObservedPod& p : recovery_.current()) {
      if (p.replica_type != rjob) continue;
      switch (p.phase) {
        case PodPhase::kSucceeded:
          ++succeeded;
          break;
        case PodPhase::kRunning:
          ++running;
          break;
        case PodPhase::kFailed:
          ++failed_pods;
          break;
        default:
          ++pending;
          break;
      }
    }
    if (suspended) {
      js.set_suspended(1);
    } else if (succeeded >= replicas) {
      js.set_succeeded(1);
    } else if (failed && failed_pods > 0) {
      js.set_failed(1);
    } else if (running + pending > 0 || succeeded > 0) {
      js.set_active(1);
    }
    if (!suspended && running + succeeded >= replicas && succeeded < replicas) js.set_ready(1);
  }
}

void Pass::ApplyTtl() {
  const auto& rp = job_.spec().run_policy();
  if (!rp.has_ttl_seconds_after_finished()) return;
  if (!status().has_completion_time()) *status().mutable_completion_time() = ToTimestamp(now_);
  const absl::Time at =
      FromTimestamp(status().completion_time()) + absl::Seconds(rp.ttl_seconds_after_finished());
  if (now_ >= at) {
    KubeObject obj;
    obj.api_version = std::string(kind_.api_version);
    obj.kind = kind_name_;
    obj.name = name();
    obj.namespace_ = job_.metadata().namespace_();
    result_.actions.push_back({Action::Type::kDeleteJob, std::move(obj)});
  } else {
    result_.requeue_at = at;
  }
}

void Pass::CreateSharedObjects() {
  for (const KubeObject& o : plan_.objects) {
    if (!Exists(o.kind, o.name)) Create(o);
  }
}

void Pass::ReconcileReplicas(std::map<std::string, bool>& nonretryable) {
  CreateSharedObjects();
  // The next attempt of a job-scoped job starts once every pod of the last one is gone: a new
  // rank must never meet an old one at the rendezvous.
  const bool previous_attempt_left = recovery_.PreviousAttemptLeft();
  for (const ObservedPod& p : observed_.pods) {
    if (recovery_.Stale(p) && !p.deleting) Delete("Pod", p.name, p.uid);
  }
  for (const std::string& type : ReplicaTypes(job_)) {
    const int replicas = Replicas(job_, type);
    const std::string policy = RestartPolicy(job_, type);
    std::map<int, std::vector<const ObservedPod*>> by_index;
    for (const ObservedPod& p : observed_.pods) {
      if (p.replica_type == type && !recovery_.Stale(p)) by_index[p.index].push_back(&p);
    }
    int limit = replicas;
    if (!by_index.empty()) limit = std::max(limit, by_index.rbegin()->first + 1);
    for (int index = 0; index < limit; ++index) {
      auto it = by_index.find(index);
      if (it == by_index.end()) {
        if (index >= replicas || previous_attempt_left || !DependenciesMet(type)) continue;
        absl::StatusOr<KubeObject> pod = plan_.pod(type, index);
        if (!pod.ok()) {
          Event("Warning", kind_name_ + "InvalidSpec", std::string(pod.status().message()));
          continue;
        }
        Create(std::move(*pod));
        continue;
      }
      for (const ObservedPod* pod : it->second) {
        if (index >= replicas || index < 0) {
          DeletePodAndService(*pod);
          continue;
        }
        // Job scope: recovery decided what a failed pod means for the whole job.
        if (pod->phase != PodPhase::kFailed || pod->deleting || recovery_.JobScope()) continue;
        const int exit_code = pod->exit_code.value_or(kUnknownExitCode);
        if (pod->exit_code) {
          Event("Normal", "ExitedWithCode",
                absl::StrCat("Pod: ", job_.metadata().namespace_(), ".", pod->name,
                             " exited with code ", exit_code));
        }
        if (RecreatesFailedPod(policy, exit_code)) {
          // The Service stays: the recreated pod has the same name and labels.
          Delete("Pod", pod->name, pod->uid);
        } else if (IsPermanentFailure(policy, exit_code)) {
          nonretryable[type] = true;
        }
      }
    }
    if (plan_.service_per_pod) ReconcileServices(type, replicas);
  }
}

// One headless Service per pod: created when missing, deleted past the replica count.
void Pass::ReconcileServices(const std::string& type, int replicas) {
  for (int index = 0; index < replicas; ++index) {
    const std::string svc = ReplicaName(job_, type, index);
    if (Exists("Service", svc)) continue;
    absl::StatusOr<KubeObject> obj = plan_.service(type, index);
    if (obj.ok()) Create(std::move(*obj));
  }
  const std::string prefix =
      ReplicaName(job_, type, 0).substr(0, ReplicaName(job_, type, 0).size() - 1);
  for (const auto& o : observed_.objects) {
    int index = 0;
    if (o.kind == "Service" && absl::StartsWith(o.name, prefix) &&
        absl::SimpleAtoi(o.name.substr(prefix.size()), &index) && index >= replicas) {
      Delete("Service", o.name);
    }
  }
}

void Pass::UpdateConditions(const std::map<std::string, bool>& nonretryable) {
  const auto& rs = status().replica_statuses();
  auto get = [&](const std::string& t) {
    auto it = rs.find(t);
    return it == rs.end() ? api::v1::ReplicaStatus() : it->second;
  };
  const std::string full = absl::StrCat(job_.metadata().namespace_(), "/", name());

  JobProgress progress;
  if (plan_.success_types.empty()) {
    bool worker0_succeeded = false;
    for (const ObservedPod& p : observed_.pods) {
      if (p.replica_type == kReplicaWorker && p.index == 0 && p.phase == PodPhase::kSucceeded) {
        worker0_succeeded = true;
      }
    }
    progress = EvaluateSuccessRule(kind_, job_, rs, worker0_succeeded);
  } else {
    // Completion of the listed types (JobSet's successPolicy); running once any pod runs.
    int reached = 0;
    for (const std::string& type : plan_.success_types) {
      reached += Reached(type, "Complete") ? 1 : 0;
    }
    progress.succeeded =
        plan_.success_any ? reached > 0 : reached == static_cast<int>(plan_.success_types.size());
    for (const auto& [type, s] : rs) progress.running = progress.running || s.active() > 0;
  }

  std::string fail_msg;
  std::string fail_type;
  std::string restart_msg;
  // An elastic job's lost Workers (a TrainJob's nodes) are recreated while the others train on:
  // no restart of it.
  const std::optional<ElasticRange> elastic = ElasticWorkers(job_);
  const bool absorbs_worker_loss =
      elastic && !recovery_.JobScope() &&
      AbsorbsWorkerLoss(*elastic, RunningWorkers(*elastic, recovery_.current()));
  for (const std::string& type : ReplicaTypes(job_)) {
    const api::v1::ReplicaStatus s = get(type);
    if (s.failed() == 0 || Replicas(job_, type) <= s.succeeded() + s.active()) continue;
    auto nr = nonretryable.find(type);
    const bool permanent = nr != nonretryable.end() && nr->second;
    if (FailureRestartsJob(kind_, RestartPolicy(job_, type), permanent)) {
      if (absorbs_worker_loss && type == elastic->type) continue;
      if (restart_msg.empty()) {
        restart_msg = absl::StrCat(kind_name_, " ", name(), " is restarting because ", s.failed(),
                                   " ", type, " replica(s) failed.");
      }
    } else if (fail_msg.empty()) {
      fail_msg = absl::StrCat(kind_name_, " ", name(), " is failed because ", s.failed(), " ", type,
                              " replica(s) failed.");
      fail_type = type;
    }
  }

  if (progress.succeeded) {
    Succeed(absl::StrCat(kind_name_, " ", full, " successfully completed."));
  } else if (!fail_msg.empty()) {
    Fail(kJobFailedReason, fail_msg, fail_type);
  } else if (!restart_msg.empty()) {
    MarkRestarting(status(), kind_name_, restart_msg, now_);
    Event("Warning", kind_name_ + api::v1::kJobRestartingReason, restart_msg);
  } else if (progress.running) {
    MarkRunning(status(), kind_name_, absl::StrCat(kind_name_, " ", full, " is running."), now_);
  }
}

// Kueue: a suspended job whose Workload waits says where and why (Queued, and an event when
// the wait starts); a job that runs again after such a wait was admitted.
void Pass::NoteQueue(bool suspended) {
  const std::string text = UpdateQueued(status(), kind_name_, suspended, observed_.queue, now_);
  if (!text.empty()) Event("Normal", api::v1::kJobWaitingForQuotaReason, text);
}

// Until the job runs, the Created condition's message says why its replicas wait (and the
// default once nothing waits); a message with a text the condition did not have is also a job
// event, so the same facts on every pass, one more replica in a state already reported, or a
// state no replica is in any more, add no event.
void Pass::ExplainPending() {
  api::v1::JobCondition* created = nullptr;
  for (api::v1::JobCondition& c : *status().mutable_conditions()) {
    if (c.type() == api::v1::kJobCreated && c.status() == api::v1::kConditionTrue) created = &c;
  }
  if (created == nullptr) return;
  std::optional<PendingReport> report;
  if (!IsFinished(status()) && !HasTrueCondition(status(), kJobRunning)) {
    report = ReportPending(observed_.pods, config_.karpenter.enabled);
  }
  // Without a report, only a message this rule wrote goes back to the default (a condition
  // updated after its transition): a Created condition as another writer left it stays.
  if (!report && google::protobuf::util::MessageDifferencer::Equals(
                     created->last_update_time(), created->last_transition_time())) {
    return;
  }
  const std::string want =
      report ? report->message : absl::StrCat(kind_name_, " ", name(), " is created.");
  if (created->message() == want) return;
  bool news = false;
  if (report) {
    const std::set<std::string> before = PendingTexts(created->message());
    for (const std::string& text : report->texts) news = news || before.count(text) == 0;
  }
  created->set_message(want);
  *created->mutable_last_update_time() = ToTimestamp(now_);
  if (news) Event(report->type, report->reason, report->message);
}

model::ReconcileResult Pass::Done() {
  UpdateJobsStatus();
  if (recovery_.InPlace()) {
    const int attempt = status().coach().attempt();
    result_.launch =
        model::LaunchDirective{attempt, recovery_.InPlaceReleased(attempt), IsFinished(status())};
  }
  model::JobStatus before = job_.status();
  model::JobStatus after = status();
  before.clear_last_reconcile_time();
  after.clear_last_reconcile_time();
  result_.status_changed = !google::protobuf::util::MessageDifferencer::Equals(before, after);
  if (result_.status_changed) *status().mutable_last_reconcile_time() = ToTimestamp(now_);
  return std::move(result_);
}

model::ReconcileResult Pass::Run(const absl::Status& policy_error) {
  if (!HasTrueCondition(status(), api::v1::kJobCreated)) {
    MarkCreated(status(), kind_name_, absl::StrCat(kind_name_, " ", name(), " is created."), now_);
  }

  if (IsFinished(status())) {
    CleanUp();
    CountSucceededReplicas();
    ApplyTtl();
    return Done();
  }

  // Never a silent stall: a job that cannot run as written fails, saying why.
  const std::string& refused = plan_.refused.empty() ? observed_.refused : plan_.refused;
  if (!refused.empty()) {
    CleanUp();
    Fail(api::v1::kJobFailedValidationReason, refused);
    ApplyTtl();
    return Done();
  }

  if (!policy_error.ok()) {
    CleanUp();
    Fail(api::v1::kJobFailedValidationReason, std::string(policy_error.message()));
    ApplyTtl();
    return Done();
  }
  recovery_.FindAttempt();
  if (recovery_.JobScope() && recovery_.attempt() != status().coach().attempt()) {
    status().mutable_coach()->set_attempt(recovery_.attempt());
  }

  const auto& rp = job_.spec().run_policy();
  if (rp.has_suspend() && rp.suspend()) {
    // The stall clock of a resumed job starts when its replicas run again.
    if (status().has_coach()) status().mutable_coach()->clear_attempt_running_time();
    NoteSuspended(now_, status());
    for (const ObservedPod& pod : observed_.pods) DeletePodAndService(pod);
    for (const auto& o : observed_.objects) {
      if (o.kind == "Service") Delete("Service", o.name);
    }
    DeletePodGroup();
    for (auto& [type, rs] : *status().mutable_replica_statuses()) rs.set_active(0);
    const std::string msg = absl::StrCat(kind_name_, " ", name(), " is suspended.");
    // Once per suspension, where upstream v1.9's ReconcileJobs records it on every pass of a
    // suspended job (pkg/controller.v1/common/job.go). Those repeats say nothing new (a pass
    // is a pod or service going away, or a resync): on kube the event recorder folds them
    // into one Event's count anyway, and the job stores keep only a job's newest events, so
    // repeats would push out the ones that explain its history. A job suspended again after
    // a resume is reported again.
    if (MarkSuspended(status(), kind_name_, msg, now_)) {
      Event("Normal", kind_name_ + api::v1::kJobSuspendedReason, msg);
    }
    NoteQueue(true);
    return Done();
  }
  NoteQueue(false);
  if (HasTrueCondition(status(), kJobSuspended)) {
    const std::string msg = absl::StrCat(kind_name_, " ", name(), " is resumed.");
    MarkResumed(status(), kind_name_, msg, now_);
    Event("Normal", kind_name_ + api::v1::kJobResumedReason, msg);
  }

  CountReplicas();
  if (!status().has_start_time()) *status().mutable_start_time() = ToTimestamp(now_);

  // Limits first: a job past them is failed whatever its pods say. A job-scoped job's budget
  // counts whole-job restarts (RecoverJob), not its pods' restarts.
  std::string limit_msg;
  AttemptEnd limit_end;
  if (!recovery_.JobScope()) limit_msg = recovery_.ReplicaBudgetSpent();
  if (!limit_msg.empty()) limit_end.reason = "BackoffLimitExceeded";
  if (limit_msg.empty() && rp.has_active_deadline_seconds()) {
    const absl::Time deadline =
        FromTimestamp(status().start_time()) + absl::Seconds(rp.active_deadline_seconds());
    if (now_ >= deadline) {
      upstream_failure_ = api::v1::kTrainJobDeadlineReason;
      limit_msg = absl::StrCat("Job ", name(),
                               " has failed because it was active longer than specified deadline");
    } else {
      result_.requeue_at = deadline;
    }
  }
  if (!limit_msg.empty()) {
    result_.requeue_at.reset();
    CleanUp();
    Fail(kJobFailedReason, limit_msg, "", limit_end);
    ApplyTtl();
    return Done();
  }

  ForceDeleteLostPods();
  if (InPlaceTimedOut()) {
    UpdateProgressStatus(recovery_.current(), config_.progress_status_interval, false, status());
    return Done();
  }
  if (recovery_.JobScope() && RecoverJob()) {
    UpdateProgressStatus(recovery_.current(), config_.progress_status_interval, true, status());
    return Done();
  }
  std::map<std::string, bool> nonretryable;
  ReconcileReplicas(nonretryable);
  UpdateConditions(nonretryable);
  ExplainPending();
  NoteElasticWorkers();
  NoteAttemptRunning();
  if (StalledUnderReplicaScope()) return Done();
  if (!IsFinished(status())) NoteAttempt();
  const std::vector<ObservedPod>& current = recovery_.current();
  if (std::optional<absl::Time> at = UpdateProgressStatus(current, config_.progress_status_interval,
                                                          IsFinished(status()), status())) {
    if (!IsFinished(status())) RequeueBy(*at);
  }
  // A backend need not wake a job for each report: a job whose replicas report looks again
  // after the interval, so its status follows their progress.
  if (!IsFinished(status()) &&
      std::any_of(current.begin(), current.end(), [](const ObservedPod& p) {
        return p.progress.has_value() && p.phase == PodPhase::kRunning;
      })) {
    RequeueBy(now_ + config_.progress_status_interval);
  }
  if (IsFinished(status())) {
    // Nothing new starts for a finished job; what ran is cleaned up per policy.
    result_.actions.erase(
        std::remove_if(result_.actions.begin(), result_.actions.end(),
                       [](const Action& a) { return a.type == Action::Type::kCreate; }),
        result_.actions.end());
    result_.events.erase(std::remove_if(result_.events.begin(), result_.events.end(),
                                        [](const model::JobEventRecord& e) {
                                          return absl::StartsWith(e.reason, "SuccessfulCreate");
                                        }),
                         result_.events.end());
    result_.requeue_at.reset();
    CleanUp();
    CountSucceededReplicas();
    ApplyTtl();
  }
  return Done();
}

}  // namespace coach::reconcile::pass_internal

namespace coach::reconcile {

model::ReconcileResult Reconcile(const model::Job& job, const model::ObservedState& observed,
                                 absl::Time now, const model::ReconcileConfig& config) {
  const auto& rp = job.spec().run_policy();
  if (rp.has_managed_by() && !rp.managed_by().empty() &&
      rp.managed_by() != ManagingController(job, config)) {
    model::ReconcileResult untouched;
    untouched.status = job.status();
    return untouched;
  }
  absl::StatusOr<model::JobPlan> plan = PlanJob(job, observed, config);
  if (!plan.ok()) {
    model::ReconcileResult bad;
    bad.status = job.status();
    bad.events.push_back({"Warning", "InvalidSpec", std::string(plan.status().message())});
    return bad;
  }
  if (plan->wait) {
    model::ReconcileResult waiting;
    waiting.status = job.status();
    waiting.events.push_back({"Warning", plan->wait->reason, plan->wait->message});
    waiting.requeue_at = now + plan->wait->retry;
    return waiting;
  }
  // Before any early return of the pass: the launchers of a job that restarts in place hear
  // that it is over (the pass's directive) on every pass of the finished job.
  absl::StatusOr<RecoveryPolicy> policy = ParseRecoveryPolicy(*plan->job, config);
  return pass_internal::Pass(*plan, observed, now, config, policy.ok() ? *policy : RecoveryPolicy())
      .Run(policy.status());
}

}  // namespace coach::reconcile
