#pragma once

// Inputs and outputs of the pure reconciler (operator/reconcile). Plain values: the
// reconciler is a function (job, observed, now, config) -> ReconcileResult.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "integrations/karpenter/config.h"
#include "operator/model/address_plan.h"
#include "operator/model/kube_object.h"

namespace coach::model {

using Job = ::coach::api::v1::TrainingJob;
using JobStatus = ::coach::api::v1::TrainingJobStatus;

enum class GangScheduler { kNone, kVolcano, kSchedulerPlugins };

// The operator's --gang-scheduler (and `coach render`'s): "none" (or ""), "volcano",
// "scheduler-plugins"; InvalidArgument naming the value otherwise.
absl::StatusOr<GangScheduler> ParseGangScheduler(std::string_view name);

// Operator-wide MLflow settings (operator/reconcile/mlflow_env.h): jobs without the
// per-job annotations are tracked when tracking_uri is set.
struct MlflowConfig {
  std::string tracking_uri;  // "" : only jobs with coach.dev/mlflow-tracking-uri
  std::string experiment = "coach";
  // Variables (name, value) every tracked replica also gets: the MLFLOW_TRACKING_* auth/TLS
  // settings, only when the operator runs with --mlflow-forward-credentials.
  std::vector<std::pair<std::string, std::string>> forwarded_env;
  // Servers a job may name in coach.dev/mlflow-tracking-uri besides tracking_uri (none by
  // default): a job-named server is otherwise refused.
  std::vector<std::string> allowed_tracking_uris;
};

// Operator-wide settings the reconciler needs. Defaults match upstream.
struct ReconcileConfig {
  GangScheduler gang_scheduler = GangScheduler::kNone;
  // Scheduler name pods get under scheduler-plugins ("scheduler-plugins-scheduler").
  std::string scheduler_plugins_scheduler_name = "scheduler-plugins-scheduler";
  // Appended to TF_CONFIG hosts as "<host>.<ns>.svc.<domain>" when non-empty.
  std::string cluster_domain;
  // A job whose runPolicy.managedBy is set to anything else is left alone.
  std::string controller_name = "kubeflow.org/training-operator";
  // Image of the PyTorch Workers' init container that waits for the Master's name
  // (operator/reconcile/master_wait.h); the kube backend sets it (the operator's own image).
  // Empty: no such init container (the local backend).
  std::string pytorch_init_image;
  // Tries of that wait, 2 s apart (upstream's --pytorch-init-container-max-tries).
  int pytorch_init_max_tries = 100;
  // Init container of the MPIJob launcher that copies kubectl into the pod.
  std::string mpi_kubectl_delivery_image = "mpioperator/kubectl-delivery:latest";
  // How replicas reach each other. Null: Kubernetes service names and declared ports
  // (with cluster_domain). The local backend installs its own.
  std::shared_ptr<const AddressPlan> address_plan;
  MlflowConfig mlflow;
  // Image of the init container that installs coach-launch into jobs with
  // coach.dev/launcher: "true" (operator/reconcile/launcher_wrap.h); the kube backend sets it
  // (--launcher-image, the operator's own image). Empty: coach-launch from the replica's PATH.
  std::string launcher_image;
  // Karpenter placement of replica pods (integrations/karpenter/placement.h); off by default.
  karpenter::Config karpenter;
  // PyTorchJobs without coach.dev/restart-scope restart as a whole job (--pytorch-restart-scope
  // Job); other kinds keep upstream's per-replica restarts unless a job asks.
  bool pytorch_job_scope_default = false;
  // A pod stuck deleting on a lost node this long is force-deleted (grace 0), so that its
  // replacement can start.
  absl::Duration lost_node_grace = absl::Minutes(2);
  // Where replicas behind coach-launch report their progress (operator/reconcile/
  // progress_report_env.h): the operator's API as pods reach it, "host:port"
  // (--progress-report-address). Empty: no replica reports.
  std::string progress_report_address;
  // The CA certificates (PEM) replicas trust for that address when the API serves TLS
  // (--progress-report-ca-file); empty: plaintext.
  std::string progress_report_ca_pem;
  // Progress reaches the job's status at most this often (each write is an API call on
  // Kubernetes); stall detection reads the replicas' reports, not the status.
  absl::Duration progress_status_interval = absl::Seconds(10);
  // A restart in place (coach.dev/restart-mode: InPlace) whose ranks are not all running the
  // new attempt this long after it was asked for recreates the pods instead.
  absl::Duration in_place_restart_timeout = absl::Seconds(60);
  // A running pod's notice (ObservedPod::notice) makes the ranks of a job-scoped job behind
  // coach-launch save a checkpoint before the job restarts: true where the requests reach the
  // pods (the kube backend with progress reports). The grace given when the notice has no
  // deadline of its own; at most max_checkpoint_grace either way.
  bool checkpoint_on_notice = false;
  absl::Duration checkpoint_grace = absl::Seconds(60);
  absl::Duration max_checkpoint_grace = absl::Seconds(120);
};

struct Action {
  enum class Type {
    kCreate,     // create `object` (body complete)
    kDelete,     // delete object.kind/object.name (body empty, or metadata.uid: only that instance)
    kDeleteJob,  // TTL expired: delete the job itself (objects cascade)
  };
  Type type = Type::kCreate;
  KubeObject object;
  // kDelete of a Pod: with grace period 0 (a pod stuck deleting on a lost node, whose kubelet
  // will never confirm it).
  bool force = false;
};

struct JobEventRecord {
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
};

// What the coach-launch of each pod of a job that restarts in place is told (the API's
// LaunchDirective).
struct LaunchDirective {
  int attempt = 0;
  bool start = false;
  bool exit = false;
  bool operator==(const LaunchDirective& o) const {
    return attempt == o.attempt && start == o.start && exit == o.exit;
  }
};

struct ReconcileResult {
  std::vector<Action> actions;
  // The status the job should have now; write it only when status_changed.
  JobStatus status;
  bool status_changed = false;
  // Reconcile again at this time even if nothing happens (deadline, TTL, backoff).
  std::optional<absl::Time> requeue_at;
  std::vector<JobEventRecord> events;
  // Set for a job that restarts in place: what its pods' coach-launch is told from now on.
  std::optional<LaunchDirective> launch;
  // Ask every pod of the job to save a checkpoint within this long (checkpoint on notice).
  std::optional<absl::Duration> request_checkpoint;
};

}  // namespace coach::model
