#include "api/v1/kinds.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/v1/job_policies.h"

namespace coach::api::v1 {

namespace {

std::vector<KindInfo> MakeKinds() {
  KindInfo pytorch{PYTORCH_JOB,
                   "PyTorchJob",
                   "pytorchjobs",
                   "pytorchReplicaSpecs",
                   "pytorch",
                   {kReplicaMaster, kReplicaWorker},
                   "pytorch",
                   "pytorchjob-port",
                   23456,
                   kRestartPolicyOnFailure,
                   {}};
  pytorch.success.leaders = {kReplicaMaster};
  pytorch.success.workers_decide_without_leader = true;
  pytorch.success.elastic_any_worker = true;

  KindInfo tf{TF_JOB,
              "TFJob",
              "tfjobs",
              "tfReplicaSpecs",
              "tensorflow",
              {kReplicaPS, kReplicaWorker, kReplicaChief, kReplicaMaster, kReplicaEvaluator},
              "tensorflow",
              "tfjob-port",
              2222,
              kRestartPolicyNever,
              {}};
  tf.success.leaders = {kReplicaChief, kReplicaMaster};
  tf.success.workers_decide_without_leader = true;
  tf.success.worker0_decides = true;

  KindInfo xgboost{XGBOOST_JOB,
                   "XGBoostJob",
                   "xgboostjobs",
                   "xgbReplicaSpecs",
                   "xgboost",
                   {kReplicaMaster, kReplicaWorker},
                   "xgboost",
                   "xgboostjob-port",
                   9999,
                   kRestartPolicyNever,
                   {}};
  xgboost.success.leaders = {kReplicaMaster};
  xgboost.restarts_only_under_exit_code = true;

  KindInfo mpi{MPI_JOB,   "MPIJob",
               "mpijobs", "mpiReplicaSpecs",
               "mpi",     {kReplicaLauncher, kReplicaWorker},
               "mpi",     "mpi-port",
               0,         kRestartPolicyNever,
               {}};
  mpi.success.leaders = {kReplicaLauncher};
  mpi.success.leader_any_succeeded = true;

  KindInfo paddle{PADDLE_JOB,
                  "PaddleJob",
                  "paddlejobs",
                  "paddleReplicaSpecs",
                  "paddle",
                  {kReplicaMaster, kReplicaWorker},
                  "paddle",
                  "master",
                  36543,
                  kRestartPolicyOnFailure,
                  {}};
  paddle.success.leaders = {kReplicaMaster};
  paddle.success.workers_decide_without_leader = true;

  KindInfo jax{JAX_JOB, "JAXJob",      "jaxjobs", "jaxReplicaSpecs",   "jax", {kReplicaWorker},
               "jax",   "jaxjob-port", 6666,      kRestartPolicyNever, {}};
  jax.success.workers_decide_without_leader = true;

  // Replica types, ports, success and restarts come from the TrainJob's runtime
  // (operator/trainer).
  KindInfo train_job{TRAIN_JOB, "TrainJob", "trainjobs", "", "trainer",
                     {},        "node",     "",          0,  kRestartPolicyOnFailure,
                     {}};
  train_job.group = kTrainerGroup;
  train_job.api_version = kTrainerApiVersion;

  return {pytorch, tf, xgboost, mpi, paddle, jax, train_job};
}

}  // namespace

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo>* kinds = new std::vector<KindInfo>(MakeKinds());
  return *kinds;
}

const KindInfo* FindKind(JobKind kind) {
  for (const KindInfo& info : AllKinds()) {
    if (info.kind == kind) return &info;
  }
  return nullptr;
}

const KindInfo* FindKindByName(std::string_view name) {
  for (const KindInfo& info : AllKinds()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::string CanonicalReplicaType(JobKind kind, std::string_view type) {
  const KindInfo* info = FindKind(kind);
  if (info == nullptr) return "";
  for (std::string_view known : info->replica_types) {
    if (absl::EqualsIgnoreCase(std::string(known), std::string(type))) return std::string(known);
  }
  return "";
}

std::string OperatorName(JobKind kind) {
  const KindInfo* info = FindKind(kind);
  if (info == nullptr) return "";
  return absl::StrCat(absl::AsciiStrToLower(std::string(info->name)), "-controller");
}

}  // namespace coach::api::v1
