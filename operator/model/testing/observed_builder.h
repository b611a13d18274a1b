#pragma once

// Builds model::ObservedState for a job: pods by (type, index) in a phase, plus the
// other objects that exist.
//   ObservedBuilder(job).Running("Master", 0).Failed("Worker", 1, 137).Build()

#include <optional>
#include <string>

#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"
#include "operator/model/replicas.h"

namespace coach::reconcile::testing {

class ObservedBuilder {
 public:
  explicit ObservedBuilder(model::Job job) : job_(std::move(job)) {}

  ObservedBuilder& Pod(const std::string& type, int index, model::PodPhase phase,
                       std::optional<int> exit_code = std::nullopt, int restarts = 0,
                       bool deleting = false) {
    model::ObservedPod pod;
    pod.name = ReplicaName(job_, type, index);
    pod.replica_type = type;
    pod.index = index;
    pod.phase = phase;
    pod.exit_code = exit_code;
    pod.restart_count = restarts;
    pod.deleting = deleting;
    pod.attempt = attempt_;
    state_.pods.push_back(pod);
    if (job_.kind() != api::v1::MPI_JOB) Object("Service", pod.name);
    return *this;
  }
  ObservedBuilder& Pending(const std::string& type, int index) {
    return Pod(type, index, model::PodPhase::kPending);
  }
  ObservedBuilder& Running(const std::string& type, int index, int restarts = 0) {
    return Pod(type, index, model::PodPhase::kRunning, std::nullopt, restarts);
  }
  ObservedBuilder& Succeeded(const std::string& type, int index) {
    return Pod(type, index, model::PodPhase::kSucceeded, 0);
  }
  ObservedBuilder& Failed(const std::string& type, int index, int exit_code) {
    return Pod(type, index, model::PodPhase::kFailed, exit_code);
  }
  ObservedBuilder& Terminating(const std::string& type, int index) {
    return Pod(type, index, model::PodPhase::kRunning, std::nullopt, 0, /*deleting=*/true);
  }
  // Every replica of the job's spec in `phase` (exit code 0 when Succeeded).
  ObservedBuilder& All(model::PodPhase phase) {
    for (const std::string& type : ReplicaTypes(job_)) {
      for (int i = 0; i < Replicas(job_, type); ++i) {
        Pod(type, i, phase,
            phase == model::PodPhase::kSucceeded ? std::optional<int>(0) : std::nullopt);
      }
    }
    return *this;
  }
  // The attempt of the pods added after this call (0 before any).
  ObservedBuilder& Attempt(int attempt) {
    attempt_ = attempt;
    return *this;
  }
  // Changes the pod added last (a disruption, a lost node, progress).
  template <typename Fn>
  ObservedBuilder& Last(Fn change) {
    change(state_.pods.back());
    return *this;
  }
  ObservedBuilder& Object(const std::string& kind, const std::string& name) {
    state_.objects.push_back({kind, name});
    return *this;
  }

  model::ObservedState Build() const { return state_; }

 private:
  model::Job job_;
  model::ObservedState state_;
  int attempt_ = 0;
};

}  // namespace coach::reconcile::testing
