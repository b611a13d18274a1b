#pragma once

// JobBuilder: a TrainingJob from code, for callers that do not start from YAML.
//
//   absl::StatusOr<TrainingJob> job = JobBuilder::PyTorch("mnist").Namespace("ml")
//       .Image("pytorch/pytorch:2.3").Command({"python3", "train.py"})
//       .Masters(1).Workers(2).NprocPerNode("2").RestartPolicy("OnFailure")
//       .Env("EPOCHS", "3").Build();
//
// Every replica type gets the same pod template: one container named after the kind's
// default container ("pytorch", "tensorflow", ...), which is the container the operator
// wires. The result is what a user would have written: not defaulted, not validated by
// the server's rules (CreateJob does that).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/training_job.pb.h"

namespace coach::sdk {

class JobBuilder {
 public:
  static JobBuilder PyTorch(const std::string& name);
  static JobBuilder TensorFlow(const std::string& name);
  static JobBuilder XGBoost(const std::string& name);
  static JobBuilder MPI(const std::string& name);
  static JobBuilder Paddle(const std::string& name);
  static JobBuilder JAX(const std::string& name);
  static JobBuilder ForKind(api::v1::JobKind kind, const std::string& name);

  JobBuilder& Namespace(const std::string& namespace_);
  JobBuilder& Label(const std::string& key, const std::string& value);
  JobBuilder& Annotation(const std::string& key, const std::string& value);

  // The container of every replica.
  JobBuilder& Image(const std::string& image);
  JobBuilder& Command(const std::vector<std::string>& command);
  JobBuilder& Args(const std::vector<std::string>& args);
  // Setting a name twice keeps the last value, in the first one's place.
  JobBuilder& Env(const std::string& name, const std::string& value);
  JobBuilder& WorkingDir(const std::string& dir);
  JobBuilder& ImagePullPolicy(const std::string& policy);
  // Resource limits (and requests, equal), e.g. ("cpu", "4"), ("nvidia.com/gpu", "1").
  JobBuilder& Resource(const std::string& name, const std::string& quantity);

  // Replica counts by CamelCase type; the helpers name upstream's types.
  JobBuilder& Replicas(const std::string& replica_type, int32_t count);
  JobBuilder& Masters(int32_t count) { return Replicas("Master", count); }
  JobBuilder& Workers(int32_t count) { return Replicas("Worker", count); }
  JobBuilder& PS(int32_t count) { return Replicas("PS", count); }
  JobBuilder& Chief(int32_t count) { return Replicas("Chief", count); }
  JobBuilder& Evaluator(int32_t count) { return Replicas("Evaluator", count); }
  JobBuilder& Launcher(int32_t count) { return Replicas("Launcher", count); }
  // "Always", "OnFailure", "Never" or "ExitCode", for every replica type.
  JobBuilder& RestartPolicy(const std::string& policy);

  // PyTorchJob: "auto", "cpu", "gpu" or a number.
  JobBuilder& NprocPerNode(const std::string& nproc);
  // PyTorchJob / PaddleJob elastic training.
  JobBuilder& Elastic(int32_t min_replicas, int32_t max_replicas);
  // MPIJob.
  JobBuilder& SlotsPerWorker(int32_t slots);

  // runPolicy.
  JobBuilder& BackoffLimit(int32_t limit);
  JobBuilder& ActiveDeadlineSeconds(int64_t seconds);
  JobBuilder& TtlSecondsAfterFinished(int32_t seconds);
  JobBuilder& CleanPodPolicy(const std::string& policy);
  JobBuilder& Suspend(bool suspend);
  JobBuilder& Queue(const std::string& queue);

  // InvalidArgument, naming each problem: an empty name, no image, no replica type, a
  // replica type the kind does not have, a negative count, a field the kind does not
  // have (nprocPerNode outside PyTorchJob, elastic outside PyTorch/Paddle, slotsPerWorker
  // outside MPIJob).
  absl::StatusOr<api::v1::TrainingJob> Build() const;

 private:
  JobBuilder(api::v1::JobKind kind, const std::string& name);

  api::v1::TrainingJob job_;
  std::string image_;
  std::vector<std::string> command_;
  std::vector<std::string> args_;
  std::vector<std::pair<std::string, std::string>> env_;
  std::string working_dir_;
  std::string image_pull_policy_;
  std::map<std::string, std::string> resources_;
  std::vector<std::pair<std::string, int32_t>> replicas_;
  std::string restart_policy_;
};

}  // namespace coach::sdk
