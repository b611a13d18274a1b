#pragma once

// What a backend observed of the objects it manages for one job. The reconciler reads
// this; it never talks to a backend itself. Backends fill it from their caches (kube)
// or process table (local).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace coach::model {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// "Pending", "Running", ... as Kubernetes spells the phase.
const char* PodPhaseName(PodPhase phase);

struct ObservedPod {
  std::string name;
  std::string replica_type;  // CamelCase, as the job's spec keys it: "Worker".
  int index = 0;
  PodPhase phase = PodPhase::kPending;
  // Exit code of the default container once it terminated (last termination for a
  // restarted container).
  std::optional<int> exit_code;
  // Restarts of the pod's containers, summed (what backoffLimit counts).
  int restart_count = 0;
  // deletionTimestamp is set: the pod is going away.
  bool deleting = false;
  absl::Time created = absl::InfinitePast();
  std::string message;  // why, when the backend knows (OOMKilled, spawn failure, ...)
  // Where it runs or ran: the pod's node (kube), this host's name (local); "" until placed.
  std::string node;
  // The instance's UID where the backend has one (Kubernetes); a delete of this pod names it,
  // so that it can never remove a newer pod of the same name.
  std::string uid;
  // Why a Pending replica that is not bound to a node waits (kube backend; empty `state`:
  // nothing known, or bound). Facts only: the reconciler words them for the job's events and
  // its Created condition (operator/reconcile/pending.h).
  struct Waiting {
    // "provisioning": Karpenter nominated a NodeClaim for it; "unschedulable": Karpenter
    // (source "karpenter") or kube-scheduler (source "scheduler") found nowhere to put it.
    std::string state;
    std::string source;
    std::string nodepool;   // the pod's karpenter.sh/nodepool selector, or the NodeClaim's
    std::string nodeclaim;  // provisioning: the nominated NodeClaim
    std::string message;    // provisioning: the NodeClaim's progress; else the reason, short
  };
  Waiting waiting;

  // Recovery facts (operator/reconcile/recovery_policy.h).
  // The job attempt the pod was created for (its coach.dev/attempt label; 0 without one).
  int attempt = 0;
  // Non-empty: the pod failed, or is going away, for a reason the program did not cause,
  // in words ("evicted: <message>", "preempted", "node lost: ..."). Such a failure
  // restarts a job-scoped job without spending its budget.
  std::string disruption;
  // The pod's node is NotReady/Unknown or gone: the pod will not run again there.
  bool node_lost = false;
  // When deletion was requested (deletionTimestamp less the grace period); only with
  // `deleting`. A pod still there `lost_node_grace` after this on a lost node is
  // force-deleted.
  absl::Time deletion_requested = absl::InfinitePast();
  // The pod still runs but is about to go, in words: its deletion ("deleted: 30s of grace"), its
  // eviction ("evicted: ..."), or its node's removal ("Karpenter is disrupting node x", kube
  // backend: node_health.h); "" when nothing says so. What a rank can still save goes before
  // notice_deadline: the end of the deletion's grace period, InfiniteFuture when not known.
  std::string notice;
  absl::Time notice_deadline = absl::InfiniteFuture();
  // A process of the replica is stopped by a signal (SIGSTOP, SIGTSTP): it makes no progress
  // until continued.
  bool stopped = false;
  // The replica's latest progress report, if it made one in this attempt.
  struct Progress {
    int64_t step = 0;
    std::map<std::string, double> metrics;
    double steps_per_second = 0;
    absl::Time time = absl::InfinitePast();
    // The lowest step since the replica's workers (re)started, when it is known: where the
    // attempt resumed.
    std::optional<int64_t> first_step;
  };
  std::optional<Progress> progress;
  // What coach-launch in the pod last said of its workers, when it restarts them in place
  // (coach.dev/restart-mode: InPlace); the pod's phase stays Running across attempts.
  struct Launch {
    enum class Phase { kRunning, kFailed, kStopped };
    int attempt = 0;
    Phase phase = Phase::kRunning;
    int exit_code = 0;  // kFailed: the first failing worker's
  };
  std::optional<Launch> launch;
};

struct ObservedObject {
  std::string kind;  // "Service", "ConfigMap", "ServiceAccount", "Role", "RoleBinding", "PodGroup"
  std::string name;
};

// The job's checkpoint request that the operator holds (checkpoint on notice: the ranks save
// before a pod goes) and its pods' answers so far; kube backend with progress reports only.
struct ObservedCheckpoint {
  int64_t id = 0;
  absl::Time deadline = absl::InfinitePast();
  struct Answer {
    bool saved = false;
    int64_t step = 0;
    std::string message;
  };
  std::map<std::string, Answer> answers;  // by pod name
};

struct ObservedState {
  std::vector<ObservedPod> pods;
  // Set by the controller where checkpoint requests reach the pods (ReconcileConfig::
  // checkpoint_on_notice) and the job has one.
  std::optional<ObservedCheckpoint> checkpoint;
  // Everything else the job owns that exists now.
  std::vector<ObservedObject> objects;
  // Non-empty: the job cannot run as it is written, and says why. Either its spec breaks a
  // rule of coach's admission (a job that reached the store without it, e.g. by
  // `kubectl apply` to a cluster whose CRDs predate the rule) or the API server refused one
  // of its objects as invalid. The reconciler marks such a job Failed.
  std::string refused;
  // The backend knows progress reports (ObservedPod::progress) made from this time on only: the
  // kube backend keeps them in memory, so after an operator starts (or takes the lead) the
  // reports made before are gone. A stall is counted from here at the earliest.
  absl::Time progress_since = absl::InfinitePast();
  // TrainJobs: the TrainingRuntime or ClusterTrainingRuntime its spec.runtimeRef names, as a
  // JSON object's text: the job's snapshot of it (the `<job>-runtime-snapshot` ConfigMap) when
  // it has one, else the runtime as the backend knows it now. Empty when neither exists;
  // `runtime_missing` then says what was looked for.
  std::string train_job_runtime;
  bool runtime_from_snapshot = false;
  std::string runtime_missing;
  // Kueue's view of the job (kube backend, where Kueue's Workload kind is served): the Workload
  // the job owns (ownerReferences), as facts; nullopt when it has none. The reconciler words
  // them (operator/reconcile/queue_wait.h) while Kueue holds the job suspended.
  struct Queue {
    std::string workload;         // the Workload's name
    std::string local_queue;      // its spec.queueName
    std::string cluster_queue;    // status.admission.clusterQueue, else the LocalQueue's
                                  // spec.clusterQueue; "" when neither is known
    bool quota_reserved = false;  // condition QuotaReserved is True
    bool admitted = false;        // condition Admitted is True
    bool active = true;           // spec.active (false: deactivated, Kueue will not admit it)
    // Kueue's words for why it is not admitted: QuotaReserved's message while no quota is
    // reserved, else Admitted's (admission checks pending).
    std::string message;
    // Condition Evicted is True: its reason ("Preempted", "InactiveWorkload", ...).
    std::string evicted;
  };
  std::optional<Queue> queue;
};

}  // namespace coach::model
