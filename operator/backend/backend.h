#pragma once

// The boundary between the controller (operator/core) and where replicas actually run:
// the local backend (process groups on this host) or Kubernetes (pods via the API
// server). The controller reads `Observe`, runs the pure reconciler, and hands each
// resulting action to `Apply`. The reconciler never knows which backend it drives.
//
// Thread-safety: implementations are called from several controller workers at once,
// but never concurrently for the same job (the controller serialises per job).

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "operator/model/address_plan.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend {

// Called by a backend when something it manages for a job changed (a process exited,
// a pod changed phase), so that the controller reconciles that job soon.
using ChangeCallback = std::function<void(const std::string& namespace_, const std::string& name)>;

// Receives log bytes; returning false stops the stream.
using LogSink = std::function<bool(const std::string& replica, const std::string& data)>;

struct LogOptions {
  // "<lowercase type>-<index>" ("master-0"); empty: every replica.
  std::string replica;
  bool follow = false;
  // 0: the whole log.
  int64_t tail_lines = 0;
  // The attempt to read (status.coach.attempts[].attempt); unset: the current one. A backend that
  // keeps earlier attempts itself (the local backend's replica directories) reads them; others
  // answer NotFound for an earlier attempt.
  std::optional<int> attempt;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "local" or "kube".
  virtual std::string Name() const = 0;

  // Registers the callback for change notifications. Called once, before Start().
  virtual void SetChangeCallback(ChangeCallback callback) = 0;

  // Starts background work (process polling, watches) and re-adopts whatever survived a
  // previous operator process. Errors: Unavailable (cannot reach the substrate).
  virtual absl::Status Start() = 0;
  // Stops background work. Replicas keep running (they belong to their jobs, not to
  // this operator process).
  virtual void Stop() = 0;

  // Prepares the backend for a newly accepted job before its first reconcile (the local
  // backend reserves ports here). Idempotent. Errors: ResourceExhausted (the job can never
  // fit on this backend, e.g. more GPUs than the host has), Unavailable.
  virtual absl::Status Admit(const model::Job& job) = 0;

  // The address plan the reconciler must use for `job` on this backend; nullptr means
  // Kubernetes naming. Valid after Admit().
  virtual std::shared_ptr<const model::AddressPlan> AddressPlanFor(const model::Job& job) = 0;

  // What exists now for `job`. Errors: Unavailable (retry later).
  virtual absl::StatusOr<model::ObservedState> Observe(const model::Job& job) = 0;

  // Carries out one action of the reconciler. Creating something that exists and deleting
  // something that does not are OK (idempotent, so a retry after a crash is safe).
  // kDeleteJob is handled by the controller, never passed here.
  // Errors: FailedPrecondition (cannot run now, e.g. GPUs busy: retry later; the message
  // says why), InvalidArgument (the object cannot run on this backend), Unavailable.
  virtual absl::Status Apply(const model::Job& job, const model::Action& action) = 0;

  // Carries out a pass's kCreate/kDelete actions (no kDeleteJob), possibly in parallel:
  // upstream creates a job's pods and services one by one (kubeflow/trainer#2361). The
  // default applies them in order with Apply and stops at the first error. An
  // implementation may reorder only within what the reconciler's order allows (the kube
  // backend creates ConfigMap/RBAC/PodGroup first, then pods and services in parallel).
  // `results`, when not null, receives one status per action in the order of `actions`
  // (actions never attempted after an error: Cancelled); used for metrics.
  // Returns OK when every action succeeded, else the first failure (in action order) with
  // the action named in the message ("create Pod job-worker-0: ..."). Error codes as Apply.
  absl::Status ApplyAll(const model::Job& job, const std::vector<model::Action>& actions) {
    return ApplyAll(job, actions, nullptr);
  }
  virtual absl::Status ApplyAll(const model::Job& job, const std::vector<model::Action>& actions,
                                std::vector<absl::Status>* results) {
    if (results != nullptr) {
      results->assign(actions.size(),
                      absl::CancelledError("not attempted: an earlier action failed"));
    }
    for (size_t i = 0; i < actions.size(); ++i) {
      absl::Status applied = Apply(job, actions[i]);
      if (results != nullptr) (*results)[i] = applied;
      if (!applied.ok()) return AnnotateAction(actions[i], applied);
    }
    return absl::OkStatus();
  }

  // "create Pod job-worker-0: <message>", same code.
  static absl::Status AnnotateAction(const model::Action& action, const absl::Status& status) {
    const char* verb = action.type == model::Action::Type::kCreate   ? "create"
                       : action.type == model::Action::Type::kDelete ? "delete"
                                                                     : "delete_job";
    return absl::Status(status.code(), absl::StrCat(verb, " ", action.object.kind, " ",
                                                    action.object.name, ": ", status.message()));
  }

  // Stops everything the job has and forgets it (the job is being deleted). Waits for
  // processes to stop, up to the grace period. Idempotent.
  virtual absl::Status Forget(const model::Job& job) = 0;

  // Streams logs of the job's replicas to `sink` until the end (or, with follow, until the
  // replica finishes, `cancelled` becomes true, or the sink returns false).
  // Errors: NotFound (no such replica), Unavailable.
  virtual absl::Status StreamLogs(const model::Job& job, const LogOptions& options,
                                  const LogSink& sink, const std::atomic<bool>& cancelled) = 0;

  // After a pass whose status stands (written, or unchanged): what the coach-launch of the
  // job's replicas is told when the job restarts in place (model::ReconcileResult::launch);
  // nullopt: nothing. The default tells nobody: only replicas that report to the operator
  // (the kube backend's) can hear it.
  virtual void DirectLaunchers(const model::Job& job,
                               const std::optional<model::LaunchDirective>& directive) {
    (void)job;
    (void)directive;
  }
};

}  // namespace coach::backend
