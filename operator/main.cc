// coach-operator: the sequence of start-up and shutdown. Flags (operator/cmd/flags.h, each
// also from the environment variable shown in --help) and their validation (settings.h), the
// store and backend (wiring.h), the controller, the gRPC API and the HTTP endpoint; graceful
// shutdown on SIGTERM/SIGINT.

#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/version/version.h"
#include "integrations/mlflow/rest_tracking_client.h"
#include "operator/backend/kube/cr_job_store.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/leader_election.h"
#include "operator/backend/progress_receiver.h"
#include "operator/cmd/allocator_trim.h"
#include "operator/cmd/api_auth_wiring.h"
#include "operator/cmd/flags.h"
#include "operator/cmd/settings.h"
#include "operator/cmd/tracker_hooks.h"
#include "operator/cmd/wiring.h"
#include "operator/core/controller.h"
#include "operator/core/job_service.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/server/grpc_server.h"
#include "operator/server/http_server.h"
#include "operator/server/pod_token_auth.h"
#include "operator/server/progress_intake.h"
#include "operator/server/token_auth.h"
#include "operator/server/training_service_impl.h"
#include "operator/tracking/mlflow_tracker.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

int Usage(const std::string& message) {
  std::cerr << "coach-operator: " << message << "\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  coach::cmd::Flags flags = coach::cmd::DefaultFlags();
  CLI::App app{
      "coach-operator: Kubeflow training jobs (kubeflow.org/v1) on this host or "
      "Kubernetes, served over gRPC"};
  app.set_version_flag("--version", std::string("coach-operator ") + coach::kVersion);
  coach::cmd::RegisterFlags(&app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  // --- Validate every flag before touching anything. ---
  coach::cmd::Settings settings;
  if (absl::Status s = coach::cmd::Validate(&flags, &settings); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  const bool kube = settings.kube;
  const coach::model::ReconcileConfig& config = settings.config;
  coach::backend::kube::LeaderElectionConfig& election = settings.election;

  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // --- Wire. ---
  // The store and backend: sqlite + processes here, or the CRs + pods of a cluster.
  coach::cmd::BackendWiring wiring;
  if (absl::Status wired = kube ? coach::cmd::WireKube(flags, settings, &wiring)
                                : coach::cmd::WireLocal(flags, &wiring);
      !wired.ok()) {
    spdlog::error("{}", std::string(wired.message()));
    return kExitFailure;
  }
  coach::backend::kube::CrJobStore* const cr_store = wiring.cr_store;
  coach::store::JobStore* const job_store = wiring.store.get();
  coach::backend::Backend* const backend_ptr = wiring.backend.get();

  coach::metrics::Registry registry;
  coach::metrics::OperatorMetrics metrics(&registry);
  if (cr_store != nullptr) cr_store->ExportEventMetrics(&registry);
  // coach_replica_schedule_seconds{nodepool} (kube backend).
  if (auto* kube_backend = dynamic_cast<coach::backend::kube::KubeBackend*>(backend_ptr)) {
    kube_backend->ExportMetrics(&registry);
  }
  coach::Clock* const clock = coach::Clock::Real();  // the one clock the binary reads
  coach::core::WatchBroadcaster watchers;
  watchers.SetObservers([&](size_t n) { metrics.watchers->Set({}, static_cast<double>(n)); },
                        [&] { metrics.watchers_dropped->Add({}); });
  coach::core::KeyedMutex job_locks;
  coach::core::JobService::Options job_service_options;
  job_service_options.mlflow = config.mlflow;
  coach::core::JobService jobs(job_store, backend_ptr, &watchers, &job_locks, &metrics,
                               job_service_options);
  coach::core::Controller::Options controller_options;
  controller_options.workers = flags.workers;
  controller_options.config = config;
  // Finished jobs keep no per-job entries where the store allows it (controller.h):
  // the local one keeps names unique across kinds, and nothing but this operator writes a job's
  // status or deletes a job. On Kubernetes kubectl does both.
  controller_options.forget_finished_jobs = !kube;

  // MLflow: one run per tracked job, off the reconcile path (operator/tracking).
  coach::core::Controller* controller_ptr = nullptr;
  coach::tracking::MlflowTrackerOptions tracker_options;
  tracker_options.mlflow = config.mlflow;
  tracker_options.backend = backend_ptr->Name();
  tracker_options.run_wait = absl::Seconds(flags.mlflow_run_wait_s);
  tracker_options.backoff_cap = absl::Seconds(flags.mlflow_max_backoff_s);
  coach::tracking::MlflowTrackerHooks tracker_hooks = coach::cmd::MakeTrackerHooks(
      job_store, &watchers, &controller_ptr, backend_ptr, config.mlflow);
  coach::tracking::MlflowTracker tracker(tracker_options, tracker_hooks, clock, &registry);
  controller_options.observer = &tracker;
  jobs.SetObserver(&tracker);
  // On Kubernetes every change, the controller's status writes included, reaches the API's
  // watchers from the CR watch (below): once, on the leader and on the others alike.
  coach::core::WatchBroadcaster controller_only;
  coach::core::Controller controller(job_store, backend_ptr, &jobs,
                                     kube ? &controller_only : &watchers, &job_locks, clock,
                                     &metrics, controller_options);
  controller_ptr = &controller;
  // glibc keeps what a burst of passes freed (the start-up pass over every stored job, a
  // thousand jobs at once) in its arenas: given back once the burst is over.
  coach::cmd::BurstTrimmer trimmer([&] { return controller.passes(); }, [] { malloc_trim(0); });
  // The tracker's workers call into the controller: they stop first on every way out.
  struct StopTracker {
    coach::tracking::MlflowTracker* tracker;
    ~StopTracker() { tracker->Stop(absl::ZeroDuration()); }
  } stop_tracker{&tracker};
  tracker.Start();
  if (!config.mlflow.tracking_uri.empty()) {
    spdlog::info("coach-operator: MLflow tracking of every job in {} (experiment {})",
                 coach::mlflow::internal::RedactUri(config.mlflow.tracking_uri),
                 config.mlflow.experiment);
  }

  // Ready only while the API is served: /readyz must not answer 200 before the gRPC port
  // is bound (a client that waited for readiness would get "connection refused").
  std::atomic<bool> serving{false};
  std::unique_ptr<coach::backend::kube::LeaderElector> elector;
  auto ready = [&] {
    // A replica that waits for the lease serves the API and is ready; the leader is
    // ready once its controller runs.
    return serving.load() && (controller.running() || (elector != nullptr && !elector->IsLeader()));
  };
  auto http = coach::server::HttpServer::Start(flags.http_listen, ready, &registry);
  if (!http.ok()) {
    spdlog::error("--http-listen: {}", http.status().ToString());
    return kExitFailure;
  }
  // The kubelet's probes on a listener of their own: whatever reaches --http-listen cannot
  // make the liveness probe fail and get the operator restarted.
  std::unique_ptr<coach::server::HttpServer> probes;
  if (!flags.probe_listen.empty()) {
    auto started = coach::server::HttpServer::Start(flags.probe_listen, ready, nullptr,
                                                    coach::server::HttpServerOptions::Probe());
    if (!started.ok()) {
      spdlog::error("--probe-listen: {}", started.status().ToString());
      return kExitFailure;
    }
    probes = *std::move(started);
  }
  if (cr_store != nullptr) {
    // Jobs created, changed or deleted by anyone (kubectl included): reconcile them and tell
    // the API's watchers. A deleted job's controller pass finds it gone and forgets it; its
    // pods and services go with it by owner reference (garbage collector).
    absl::Status watching = cr_store->StartWatching([&](const coach::backend::kube::JobChange& c) {
      // The kind too: a PyTorchJob and a TFJob of one name are two jobs (and the plain name
      // of either would name neither).
      controller.Enqueue(c.key);
      if (!c.job.has_value()) return;
      const coach::core::WatchEventType type =
          c.type == coach::backend::kube::JobChangeType::kAdded
              ? coach::core::WatchEventType::kAdded
          : c.type == coach::backend::kube::JobChangeType::kModified
              ? coach::core::WatchEventType::kModified
              : coach::core::WatchEventType::kDeleted;
      watchers.Publish(type, *c.job);
    });
    if (!watching.ok()) {
      spdlog::error("job watch: {}", watching.ToString());
      return kExitFailure;
    }
    if (!cr_store->WaitForSync(absl::Seconds(60))) {
      spdlog::warn(
          "job watch: not every kind listed within 60s (are coach's CRDs installed? "
          "kubectl apply -f charts/coach/crds); going on");
    }
  }
  // Leader election gates the controller; without it the controller starts now.
  absl::Mutex lead_mu;
  bool lead_acquired = false;
  bool lead_shutdown = false;
  std::atomic<int> exit_code{0};
  std::thread lead_thread;
  if (kube && flags.leader_elect) {
    election.on_started_leading = [&] {
      absl::MutexLock lock(&lead_mu);
      lead_acquired = true;
    };
    election.on_stopped_leading = [&] {
      bool lost;
      {
        absl::MutexLock lock(&lead_mu);
        lost = lead_acquired && !lead_shutdown;  // not the release at shutdown
      }
      if (lost) {
        // As upstream: a replica that lost the lease exits (and is restarted), so that two
        // controllers never overlap.
        spdlog::error("leader election: lost the lease while reconciling; exiting");
        exit_code = kExitFailure;
        kill(getpid(), SIGTERM);
      }
    };
    auto made = coach::backend::kube::LeaderElector::Create(wiring.kube_client.get(), election);
    if (!made.ok()) {
      spdlog::error("leader election: {}", made.status().ToString());
      return kExitFailure;
    }
    elector = *std::move(made);
    lead_thread = std::thread([&] {
      {
        absl::MutexLock lock(&lead_mu);
        auto decided = [&] { return lead_acquired || lead_shutdown; };
        lead_mu.Await(absl::Condition(&decided));
        if (lead_shutdown) return;
      }
      if (absl::Status started = controller.Start(); !started.ok()) {
        spdlog::error("backend {}: {}", backend_ptr->Name(), started.ToString());
        exit_code = kExitFailure;
        kill(getpid(), SIGTERM);
      }
    });
    elector->Start();
    spdlog::info("leader election: {} waits for lease {}/{}", elector->identity(),
                 election.lease_namespace, election.lease_name);
  } else {
    if (absl::Status started = controller.Start(); !started.ok()) {
      spdlog::error("backend {}: {}", backend_ptr->Name(), started.ToString());
      return kExitFailure;
    }
  }
  auto api_auth = coach::cmd::MakeApiAuth(settings, wiring.kube_client.get(), clock);
  if (!api_auth.ok()) {
    spdlog::error("{}", std::string(api_auth.status().message()));
    controller.Stop();
    return kExitFailure;
  }
  const std::string auth_mode = (*api_auth)->Mode();
  // Replicas' own progress reports (--progress-report-address): each pod's token, reviewed for
  // audience "coach", lets it report for itself to the kube backend, whatever --api-auth is.
  std::unique_ptr<coach::server::PodTokenAuth> pod_tokens;
  std::unique_ptr<coach::server::ProgressIntake> progress_intake;
  auto* progress_receiver = dynamic_cast<coach::backend::ProgressReceiver*>(backend_ptr);
  if (!config.progress_report_address.empty() && progress_receiver != nullptr &&
      wiring.kube_client != nullptr) {
    coach::server::PodTokenAuthOptions pod_token_options;
    pod_token_options.clock = clock;
    pod_tokens =
        std::make_unique<coach::server::PodTokenAuth>(wiring.kube_client.get(), pod_token_options);
    progress_intake =
        std::make_unique<coach::server::ProgressIntake>(pod_tokens.get(), progress_receiver);
  }
  coach::server::TrainingServiceImpl service(&jobs, *std::move(api_auth));
  if (progress_intake != nullptr) {
    service.SetProgressIntake(progress_intake.get());
    spdlog::info("coach-operator: replicas report progress to {}{}", config.progress_report_address,
                 config.progress_report_ca_pem.empty() ? "" : " (TLS)");
  }
  auto grpc = coach::server::GrpcServer::Start(&service, settings.grpc_options);
  if (!grpc.ok()) {
    spdlog::error("--listen: {}", grpc.status().ToString());
    controller.Stop();
    return kExitFailure;
  }
  trimmer.Start();
  serving = true;
  spdlog::info("coach-operator: API on {} ({}, auth {}), HTTP on {}{}{}, state in {}, backend {}",
               flags.listen, (*grpc)->tls() ? "TLS" : "plaintext", auth_mode, flags.http_listen,
               probes != nullptr ? ", probes on " : "", flags.probe_listen,
               kube ? "the API server" : flags.state_dir, backend_ptr->Name());
  if (!settings.own_token_file.empty()) {
    spdlog::info("coach-operator: callers present the token in {} (this user's coach CLI reads it)",
                 settings.own_token_file);
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("coach-operator: signal {}, shutting down", signal_number);

  // Stop accepting calls and end the streams, finish the reconciles in flight, stop the
  // backend (replicas keep running; a restarted operator re-adopts them).
  serving = false;
  watchers.Shutdown();
  (*grpc)->Shutdown(absl::Seconds(5));
  if (lead_thread.joinable()) {
    {
      absl::MutexLock lock(&lead_mu);
      lead_shutdown = true;
    }
    lead_thread.join();
  }
  trimmer.Stop();
  controller.Stop();
  // Release the lease only once this controller has stopped: never two at once.
  if (elector != nullptr) elector->Stop();
  if (cr_store != nullptr) cr_store->StopWatching();
  // A moment for runs to record what just happened; the rest resumes after a restart.
  tracker.Stop(absl::Seconds(2));
  jobs.SetObserver(nullptr);
  // Nothing appends events any more: write the queued ones (the record `kubectl describe`
  // shows), bounded by --kube-event-shutdown-grace; the rest are counted and logged.
  if (cr_store != nullptr) cr_store->StopEvents(absl::Seconds(flags.kube_event_shutdown_grace_s));
  (*http)->Stop();
  if (probes != nullptr) probes->Stop();
  spdlog::info("coach-operator: stopped");
  return exit_code.load();
}
