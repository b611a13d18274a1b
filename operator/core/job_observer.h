#pragma once

// JobObserver: how an integration (MLflow tracking, operator/tracking) follows jobs without
// being on the reconcile path. Every method is called with the job's KeyLock held and must
// return promptly: queue the work, never wait on a network.

#include <optional>

#include "absl/time/time.h"
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

  // Before a job's first replica is created: the time until which the controller may hold
  // the start back (the observer is preparing something the replicas' environment carries,
  // such as the job's MLflow run), or nullopt to start now. The controller re-reads the job
  // when the observer changes it and never holds past the returned time.
  virtual std::optional<absl::Time> HoldStartUntil(const model::Job& job) = 0;
};

}  // namespace coach::core
