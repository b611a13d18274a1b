#pragma once

// JobObserver: how an integration (MLflow tracking, operator/tracking) follows jobs without
// being on the reconcile path. Every method is called with the job's KeyLock held and must
// return promptly: queue the work, never wait on a network.

#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::core {

class JobObserver {
 public:
  virtual ~JobObserver() = default;

  // After every successful controller pass over a job: the job as stored at its end.
  virtual void JobSeen(const model::Job& job) = 0;

  // JobService is about to delete the job (API delete or TTL); its replicas still exist
  // (their logs can be read). Local reads are fine here; network calls are not.
  virtual void JobDeleting(const model::Job& job) = 0;

  // The controller is about to delete these pods of the job (a restart recreates them, or
  // cleanPodPolicy ends them): their logs can still be read, through the backend, bounded.
  virtual void PodsDeleting(const model::Job& job, const std::vector<model::ObservedPod>& pods) {
    (void)job;
    (void)pods;
  }

  // Before a job's first replica is created: the time until which the controller may hold
  // the start back (the observer is preparing something the replicas' environment carries,
  // such as the job's MLflow run), or nullopt to start now. The controller re-reads the job
  // when the observer changes it and never holds past the returned time.
  virtual std::optional<absl::Time> HoldStartUntil(const model::Job& job) = 0;
};

}  // namespace coach::core

namespace coach::core {

// Several observers as one, each told everything in order; the start is held until the latest
// of their holds.
class JobObservers final : public JobObserver {
 public:
  explicit JobObservers(std::vector<JobObserver*> observers) : observers_(std::move(observers)) {}

  void JobSeen(const model::Job& job) override {
    for (JobObserver* o : observers_) o->JobSeen(job);
  }
  void JobDeleting(const model::Job& job) override {
    for (JobObserver* o : observers_) o->JobDeleting(job);
  }
  void PodsDeleting(const model::Job& job, const std::vector<model::ObservedPod>& pods) override {
    for (JobObserver* o : observers_) o->PodsDeleting(job, pods);
  }
  std::optional<absl::Time> HoldStartUntil(const model::Job& job) override {
    std::optional<absl::Time> until;
    for (JobObserver* o : observers_) {
      std::optional<absl::Time> hold = o->HoldStartUntil(job);
      if (hold && (!until || *hold > *until)) until = hold;
    }
    return until;
  }

 private:
  const std::vector<JobObserver*> observers_;
};

}  // namespace coach::core
