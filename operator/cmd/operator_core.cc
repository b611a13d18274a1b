#include "operator/cmd/operator_core.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <cstddef>

#include "integrations/mlflow/rest_tracking_client.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/cmd/tracker_hooks.h"

namespace coach::cmd {
namespace {

// The backend's families follow the operator's: /metrics lists them in registration order.
metrics::OperatorMetrics RegisterMetrics(metrics::Registry* registry, const BackendWiring& wiring) {
  metrics::OperatorMetrics operator_metrics(registry);
  if (wiring.cr_store != nullptr) wiring.cr_store->ExportEventMetrics(registry);
  // coach_replica_schedule_seconds{nodepool} (kube backend).
  if (auto* kube_backend = dynamic_cast<backend::kube::KubeBackend*>(wiring.backend.get())) {
    kube_backend->ExportMetrics(registry);
  }
  return operator_metrics;
}

core::JobService::Options JobServiceOptions(const Settings& settings) {
  core::JobService::Options options;
  options.mlflow = settings.config.mlflow;
  return options;
}

// MLflow: one run per tracked job, off the reconcile path (operator/tracking).
tracking::MlflowTrackerOptions TrackerOptions(const Flags& flags, const Settings& settings,
                                              const backend::Backend& backend) {
  tracking::MlflowTrackerOptions options;
  options.mlflow = settings.config.mlflow;
  options.backend = backend.Name();
  options.run_wait = absl::Seconds(flags.mlflow_run_wait_s);
  options.backoff_cap = absl::Seconds(flags.mlflow_max_backoff_s);
  return options;
}

std::unique_ptr<s3::ObjectStore> HistoryObjects(const Settings& settings) {
  if (!settings.history.store) return nullptr;
  absl::StatusOr<std::unique_ptr<s3::ObjectStore>> store =
      s3::MakeS3ObjectStore(settings.history.s3);
  if (!store.ok()) {
    // Validate checked the options: only libcurl's setup can fail here.
    spdlog::error("coach-operator: no history store: {}", store.status().ToString());
    return nullptr;
  }
  return std::move(store).value();
}

history::LogKeeperOptions KeeperOptions(const Settings& settings) {
  history::LogKeeperOptions options;
  options.max_log_bytes = settings.history.max_log_bytes;
  options.retention = settings.history.retention;
  return options;
}

core::Controller::Options ControllerOptions(const Flags& flags, const Settings& settings,
                                            core::JobObserver* observer) {
  core::Controller::Options options;
  options.workers = flags.workers;
  options.config = settings.config;
  // Finished jobs keep no per-job entries where the store allows it (controller.h):
  // the local one keeps names unique across kinds, and nothing but this operator writes a job's
  // status or deletes a job. On Kubernetes kubectl does both.
  options.forget_finished_jobs = !settings.kube;
  options.observer = observer;
  return options;
}

}  // namespace

OperatorCore::OperatorCore(const Flags& flags, const Settings& settings,
                           const BackendWiring& wiring)
    : clock(Clock::Real()),
      metrics(RegisterMetrics(&registry, wiring)),
      jobs(wiring.store.get(), wiring.backend.get(), &watchers, &job_locks, &metrics,
           JobServiceOptions(settings)),
      tracker(TrackerOptions(flags, settings, *wiring.backend),
              MakeTrackerHooks(wiring.store.get(), &watchers, &controller_ptr, wiring.backend.get(),
                               settings.config.mlflow),
              clock, &registry),
      history_objects(HistoryObjects(settings)),
      history_store(history_objects ? std::make_unique<history::HistoryStore>(
                                          history_objects.get(), settings.history.prefix)
                                    : nullptr),
      keeper(KeeperOptions(settings), wiring.backend.get(), history_store.get(), &tracker, clock,
             &registry),
      observers({&tracker, &keeper}),
      controller(wiring.store.get(), wiring.backend.get(), &jobs,
                 settings.kube ? &controller_only : &watchers, &job_locks, clock, &metrics,
                 ControllerOptions(flags, settings, &observers)),
      trimmer([this] { return controller.passes(); }, [] { malloc_trim(0); }) {
  watchers.SetObservers([this](size_t n) { metrics.watchers->Set({}, static_cast<double>(n)); },
                        [this] { metrics.watchers_dropped->Add({}); });
  jobs.SetObserver(&observers);
  jobs.SetHistory(&keeper);
  controller_ptr = &controller;
}

void OperatorCore::StartTracker(const model::MlflowConfig& config) {
  tracker.Start();
  keeper.Start();
  if (history_store != nullptr) {
    spdlog::info(
        "coach-operator: each attempt's logs and deleted jobs' histories kept in the "
        "history store");
  }
  if (!config.tracking_uri.empty()) {
    spdlog::info("coach-operator: MLflow tracking of every job in {} (experiment {})",
                 ::coach::mlflow::internal::RedactUri(config.tracking_uri), config.experiment);
  }
}

}  // namespace coach::cmd
