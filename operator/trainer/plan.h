#pragma once

// The state MergeRuntime threads through its steps (merge_runtime.cc, framework_env.cc);
// internal to this package.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::trainer::internal {

struct Plan {
  std::string name;        // the TrainJob's
  std::string namespace_;  // the TrainJob's
  std::string runtime_name;
  const nlohmann::json* trainer = nullptr;  // the TrainJob's spec.trainer, when set
  nlohmann::json spec;                      // the JobSet spec under construction
  std::vector<std::string> ancestors;       // per replicated job, "" when unlabelled
  std::vector<int64_t> counts;              // pods per replicated job
  int trainer_index = -1;
  nlohmann::json ml_policy;  // the runtime's, updated with what the TrainJob decided
  // What the trainer job's `node` container runs; null keeps the runtime's.
  nlohmann::json trainer_command;

  const std::string& JobName(int i) const;
  nlohmann::json& PodSpec(int i);
  // Index of the replicated job called `name`, -1 when none.
  int FindJob(const std::string& name) const;
};

// The resources the framework rules size a node by: the TrainJob's resourcesPerNode when set,
// else those of the `node` container of the first job that is named `node` or is the trainer.
nlohmann::json ResourcesPerNode(Plan& plan);
// GPUs per node: the first resource whose name contains "gpu" in requests, else in limits.
absl::StatusOr<int64_t> GpusPerNode(const nlohmann::json& resources);
// CPUs per node: requests.cpu unless absent or zero, else limits.cpu, rounded up; 0 when none.
absl::StatusOr<int64_t> CpusPerNode(const nlohmann::json& resources);

// Applies spec.mlPolicy (torch, mpi, jax, xgboost or none) to `plan`: pod counts, env, ports,
// MPI volumes, the torchtune command. Errors as MergeRuntime's.
absl::Status ApplyMlPolicy(Plan& plan);

}  // namespace coach::trainer::internal
