#pragma once

// Per-kind facts of kubeflow.org/v1 (upstream v1.9): names, replica types, defaults; and of
// Kubeflow Trainer v2's TrainJob (trainer.kubeflow.org/v1alpha1), whose replica types are the
// replicated jobs of its runtime (operator/trainer). One table so that the codec, the
// defaulting, the validation and the reconciler agree.

#include <string>
#include <string_view>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::api::v1 {

// Replica types (CamelCase, as the replica-spec keys are normalised).
inline constexpr char kReplicaMaster[] = "Master";
inline constexpr char kReplicaWorker[] = "Worker";
inline constexpr char kReplicaChief[] = "Chief";
inline constexpr char kReplicaPS[] = "PS";
inline constexpr char kReplicaEvaluator[] = "Evaluator";
inline constexpr char kReplicaLauncher[] = "Launcher";

// Which replicas decide that a job succeeded, and which show it running: upstream's
// per-kind UpdateJobStatus as data (kubeflow-v1.md, "Status"). Evaluated by
// operator/reconcile/success_rule.h.
struct SuccessRule {
  // Leader replica types in order of preference: the first one the job declares decides
  // alone (its success is the job's, its active replicas make the job Running).
  std::vector<std::string_view> leaders;
  // The leader has succeeded once any of its replicas has (MPI's Launcher), rather than
  // all of them.
  bool leader_any_succeeded = false;
  // Without a leader the Workers decide: all of them succeeded, active ones show Running.
  // False: a job without a leader never succeeds (XGBoost's Master is required).
  bool workers_decide_without_leader = false;
  // Without a leader, Worker 0's success decides unless spec.successPolicy is AllWorkers
  // (TFJob).
  bool worker0_decides = false;
  // Without a leader, with spec.elasticPolicy, any Worker's success decides (PyTorchJob).
  bool elastic_any_worker = false;
};

struct KindInfo {
  JobKind kind;
  std::string_view name;                        // "PyTorchJob"
  std::string_view plural;                      // "pytorchjobs"
  std::string_view replica_specs_key;           // "pytorchReplicaSpecs"
  std::string_view framework;                   // "pytorch": metrics label, operator-name prefix
  std::vector<std::string_view> replica_types;  // CamelCase, in upstream's order
  std::string_view default_container;           // "pytorch"
  std::string_view default_port_name;           // "pytorchjob-port"
  int default_port;                             // 23456; 0 when upstream does not default one (MPI)
  std::string_view default_restart_policy;      // "OnFailure"
  SuccessRule success;
  // A replica failure makes the job Restarting only under restartPolicy ExitCode; under
  // every other policy it fails the job (XGBoostJob). False: any policy but Never restarts.
  bool restarts_only_under_exit_code = false;
  std::string_view group = "kubeflow.org";
  std::string_view api_version = "kubeflow.org/v1";
};

inline constexpr std::string_view kApiVersion = "kubeflow.org/v1";
inline constexpr std::string_view kGroup = "kubeflow.org";
inline constexpr std::string_view kTrainerApiVersion = "trainer.kubeflow.org/v1alpha1";
inline constexpr std::string_view kTrainerGroup = "trainer.kubeflow.org";

// Every supported kind, in a stable order: the six kubeflow.org/v1 kinds, then TrainJob.
const std::vector<KindInfo>& AllKinds();

// The entry for `kind`; JOB_KIND_UNSPECIFIED has none (returns nullptr).
const KindInfo* FindKind(JobKind kind);
// By Kubernetes kind name ("TFJob"), exact match; nullptr when unknown.
const KindInfo* FindKindByName(std::string_view name);

// Upstream normalises replica-type keys to CamelCase ("worker" -> "Worker", "ps" -> "PS").
// Returns the canonical spelling for `kind`, or "" when the type is not one of its types.
std::string CanonicalReplicaType(JobKind kind, std::string_view type);

// "<kind lowercase>-controller", the value of training.kubeflow.org/operator-name.
std::string OperatorName(JobKind kind);

}  // namespace coach::api::v1
