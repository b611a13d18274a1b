// coach-operator's parts between the store and backend (wiring.h) and its servers: the
// metrics, the API's job service, the MLflow tracker and the controller.

#pragma once

#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/cmd/allocator_trim.h"
#include "operator/cmd/flags.h"
#include "operator/cmd/settings.h"
#include "operator/cmd/wiring.h"
#include "operator/core/controller.h"
#include "operator/core/job_service.h"
#include "operator/core/keyed_mutex.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/history/history_store.h"
#include "operator/history/log_keeper.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/metrics/registry.h"
#include "operator/tracking/mlflow_tracker.h"

namespace coach::cmd {

// Built in dependency order and destroyed in reverse; nothing runs until StartTracker and the
// controller's Start. Neither copyable nor movable: its members point at one another.
struct OperatorCore {
  // `flags`, `settings` and `wiring` (its store and backend) must outlive this.
  OperatorCore(const Flags& flags, const Settings& settings, const BackendWiring& wiring);
  OperatorCore(const OperatorCore&) = delete;
  OperatorCore& operator=(const OperatorCore&) = delete;
  // The tracker's workers call into the controller: they stop first on every way out.
  ~OperatorCore() {
    tracker.Stop(absl::ZeroDuration());
    keeper.Stop(absl::ZeroDuration());
  }

  // Starts the tracker's and the history's workers and logs where runs and histories go
  // (`config`: the operator's MLflow settings).
  void StartTracker(const model::MlflowConfig& config);

  Clock* const clock;  // the one clock the binary reads
  metrics::Registry registry;
  metrics::OperatorMetrics metrics;
  core::WatchBroadcaster watchers;
  core::KeyedMutex job_locks;
  core::JobService jobs;
  // The tracker's hooks read it at each call: null until the controller, made after the tracker
  // (it observes it), exists.
  core::Controller* controller_ptr = nullptr;
  tracking::MlflowTracker tracker;
  // Each attempt's logs and deleted jobs' histories (docs/history.md): in the store when the
  // operator has one (null otherwise), in tracked jobs' MLflow runs through the tracker.
  std::unique_ptr<s3::ObjectStore> history_objects;
  std::unique_ptr<history::HistoryStore> history_store;
  history::LogKeeper keeper;
  // What the controller and the job service tell: the tracker, then the history.
  core::JobObservers observers;
  // On Kubernetes every change, the controller's status writes included, reaches the API's
  // watchers from the CR watch (job_watch.h): once, on the leader and on the others alike.
  core::WatchBroadcaster controller_only;
  core::Controller controller;
  // glibc keeps what a burst of passes freed (the start-up pass over every stored job, a
  // thousand jobs at once) in its arenas: given back once the burst is over.
  BurstTrimmer trimmer;
};

}  // namespace coach::cmd
