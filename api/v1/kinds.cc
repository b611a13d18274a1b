#include "api/v1/kinds.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace coach::api::v1 {

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo>* kinds = new std::vector<KindInfo>{
      {PYTORCH_JOB, "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", "pytorch",
       {"Master", "Worker"}, "pytorch", "pytorchjob-port", 23456, "OnFailure"},
      {TF_JOB, "TFJob", "tfjobs", "tfReplicaSpecs", "tensorflow",
       {"PS", "Worker", "Chief", "Master", "Evaluator"}, "tensorflow", "tfjob-port", 2222,
       "Never"},
      {XGBOOST_JOB, "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", "xgboost",
       {"Master", "Worker"}, "xgboost", "xgboostjob-port", 9999, "Never"},
      {MPI_JOB, "MPIJob", "mpijobs", "mpiReplicaSpecs", "mpi", {"Launcher", "Worker"}, "mpi",
       "mpi-port", 0, "Never"},
      {PADDLE_JOB, "PaddleJob", "paddlejobs", "paddleReplicaSpecs", "paddle",
       {"Master", "Worker"}, "paddle", "master", 36543, "OnFailure"},
      {JAX_JOB, "JAXJob", "jaxjobs", "jaxReplicaSpecs", "jax", {"Worker"}, "jax",
       "jaxjob-port", 6666, "Never"},
  };
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
