// coach-operator: wiring only. Flags (each also from the environment variable shown in
// --help), the store, the backend, the controller, the gRPC API and the HTTP endpoint;
// graceful shutdown on SIGTERM/SIGINT.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/local_backend.h"
#include "operator/backend/local/sqlite_job_store.h"
#include "operator/core/clock.h"
#include "operator/core/controller.h"
#include "operator/core/job_service.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/server/grpc_server.h"
#include "operator/server/http_server.h"
#include "operator/server/token_auth.h"
#include "operator/server/training_service_impl.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

struct Flags {
  std::string backend = "local";
  std::string listen = "127.0.0.1:7450";
  std::string http_listen = "127.0.0.1:7451";
  std::string state_dir;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string token_file;
  int workers = 2;
  std::string gang_scheduler = "none";
  std::string log_level = "info";
  std::string shim;
  std::string workdir;
};

int Usage(const std::string& message) {
  std::cerr << "coach-operator: " << message << "\n";
  return kExitUsage;
}

// The file's content; an error naming the flag when unreadable.
bool ReadFlagFile(const std::string& flag, const std::string& path, std::string* out,
                  std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = absl::StrCat(flag, ": cannot read ", path);
    return false;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  *out = buf.str();
  if (out->empty()) {
    *error = absl::StrCat(flag, ": ", path, " is empty");
    return false;
  }
  return true;
}

bool IsLoopback(const std::string& listen) {
  std::string host;
  int port;
  if (!coach::server::SplitHostPort(listen, &host, &port).ok()) return false;
  return host == "127.0.0.1" || host == "::1" || host == "localhost" ||
         host.rfind("127.", 0) == 0;
}

// Next to the executable (installed layout), else in Bazel's runfiles.
std::string DefaultShimPath() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  exe[n] = '\0';
  const std::filesystem::path self(exe);
  for (const std::filesystem::path& candidate :
       {self.parent_path() / "coach-replica-shim",
        std::filesystem::path(std::string(exe) + ".runfiles") / "coach" / "operator" /
            "backend" / "local" / "coach-replica-shim",
        self.parent_path() / "backend" / "local" / "coach-replica-shim"}) {
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return (self.parent_path() / "coach-replica-shim").string();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') {
    flags.state_dir = std::string(home) + "/.local/state/coach";
  }

  CLI::App app{"coach-operator: Kubeflow training jobs (kubeflow.org/v1) on this host or "
               "Kubernetes, served over gRPC"};
  app.add_option("--backend", flags.backend, "Where replicas run: local | kube")
      ->envname("COACH_BACKEND")
      ->capture_default_str();
  app.add_option("--listen", flags.listen, "gRPC API address (host:port)")
      ->envname("COACH_LISTEN")
      ->capture_default_str();
  app.add_option("--http-listen", flags.http_listen,
                 "/healthz, /readyz and /metrics address (host:port)")
      ->envname("COACH_HTTP_LISTEN")
      ->capture_default_str();
  app.add_option("--state-dir", flags.state_dir, "Durable state (jobs database, logs)")
      ->envname("COACH_STATE_DIR")
      ->capture_default_str();
  app.add_option("--tls-cert", flags.tls_cert, "Server certificate (PEM); enables TLS")
      ->envname("COACH_TLS_CERT");
  app.add_option("--tls-key", flags.tls_key, "Server private key (PEM)")
      ->envname("COACH_TLS_KEY");
  app.add_option("--tls-client-ca", flags.tls_client_ca,
                 "CA bundle (PEM) client certificates must chain to (mutual TLS)")
      ->envname("COACH_TLS_CLIENT_CA");
  app.add_option("--token-file", flags.token_file,
                 "File holding the bearer token every API call must present")
      ->envname("COACH_TOKEN_FILE");
  app.add_option("--workers", flags.workers, "Reconcile workers")
      ->envname("COACH_WORKERS")
      ->capture_default_str();
  app.add_option("--gang-scheduler", flags.gang_scheduler,
                 "none | volcano | scheduler-plugins")
      ->envname("COACH_GANG_SCHEDULER")
      ->capture_default_str();
  app.add_option("--log-level", flags.log_level, "trace|debug|info|warn|error|critical|off")
      ->envname("COACH_LOG_LEVEL")
      ->capture_default_str();
  app.add_option("--shim", flags.shim,
                 "coach-replica-shim executable (local backend); default: next to this binary")
      ->envname("COACH_SHIM");
  app.add_option("--workdir", flags.workdir,
                 "working directory of local replicas whose container sets no workingDir; "
                 "default: this process's working directory")
      ->envname("COACH_WORKDIR");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  // --- Validate every flag before touching anything. ---
  if (flags.backend == "kube") {
    return Usage("--backend=kube: the Kubernetes backend is not yet available; use "
                 "--backend=local");
  }
  if (flags.backend != "local") {
    return Usage(absl::StrCat("--backend: must be local or kube, got \"", flags.backend, "\""));
  }
  for (const auto& [flag, value] :
       {std::pair<std::string, std::string>{"--listen", flags.listen},
        {"--http-listen", flags.http_listen}}) {
    std::string host;
    int port;
    if (absl::Status s = coach::server::SplitHostPort(value, &host, &port); !s.ok()) {
      return Usage(absl::StrCat(flag, ": ", s.message()));
    }
  }
  if (flags.state_dir.empty()) return Usage("--state-dir: required when $HOME is not set");
  if (flags.workers < 1 || flags.workers > 256) {
    return Usage(absl::StrCat("--workers: must be in 1..256, got ", flags.workers));
  }
  coach::model::ReconcileConfig config;
  if (flags.gang_scheduler == "none") {
    config.gang_scheduler = coach::model::GangScheduler::kNone;
  } else if (flags.gang_scheduler == "volcano") {
    config.gang_scheduler = coach::model::GangScheduler::kVolcano;
  } else if (flags.gang_scheduler == "scheduler-plugins") {
    config.gang_scheduler = coach::model::GangScheduler::kSchedulerPlugins;
  } else {
    return Usage(absl::StrCat("--gang-scheduler: must be none, volcano or scheduler-plugins, got \"",
                              flags.gang_scheduler, "\""));
  }
  const spdlog::level::level_enum level = spdlog::level::from_str(flags.log_level);
  if (level == spdlog::level::off && flags.log_level != "off") {
    return Usage(absl::StrCat("--log-level: unknown level \"", flags.log_level, "\""));
  }
  spdlog::set_level(level);

  coach::server::GrpcServerOptions grpc_options;
  grpc_options.listen = flags.listen;
  std::string error;
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return Usage("--tls-cert and --tls-key: give both or neither");
  }
  if (!flags.tls_client_ca.empty() && flags.tls_cert.empty()) {
    return Usage("--tls-client-ca: needs --tls-cert and --tls-key");
  }
  if (!flags.tls_cert.empty() &&
      (!ReadFlagFile("--tls-cert", flags.tls_cert, &grpc_options.tls_cert_pem, &error) ||
       !ReadFlagFile("--tls-key", flags.tls_key, &grpc_options.tls_key_pem, &error))) {
    return Usage(error);
  }
  if (!flags.tls_client_ca.empty() &&
      !ReadFlagFile("--tls-client-ca", flags.tls_client_ca, &grpc_options.tls_client_ca_pem,
                    &error)) {
    return Usage(error);
  }
  std::string token;
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> read = coach::server::ReadTokenFile(flags.token_file);
    if (!read.ok()) return Usage(absl::StrCat("--token-file: ", read.status().message()));
    token = *read;
  }
  if (flags.shim.empty()) flags.shim = DefaultShimPath();
  if (access(flags.shim.c_str(), X_OK) != 0) {
    return Usage(absl::StrCat("--shim: ", flags.shim, " is not an executable file"));
  }
  if (!IsLoopback(flags.listen) && (token.empty() || flags.tls_cert.empty())) {
    spdlog::warn("--listen {} is not loopback and the API has {}{}", flags.listen,
                 token.empty() ? "no token" : "a token", flags.tls_cert.empty() ? " but no TLS" : "");
  }
  std::error_code ec;
  if (flags.workdir.empty()) flags.workdir = std::filesystem::current_path(ec).string();
  if (!std::filesystem::is_directory(flags.workdir, ec)) {
    return Usage(absl::StrCat("--workdir: ", flags.workdir, " is not a directory"));
  }
  flags.workdir = std::filesystem::absolute(flags.workdir, ec).string();
  std::filesystem::create_directories(flags.state_dir, ec);
  flags.state_dir = std::filesystem::absolute(flags.state_dir, ec).string();

  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // --- Wire. ---
  auto store = coach::backend::local::SqliteJobStore::Open(flags.state_dir);
  if (!store.ok()) {
    spdlog::error("--state-dir {}: {}", flags.state_dir, store.status().ToString());
    return kExitFailure;
  }
  coach::backend::local::LocalBackendOptions backend_options;
  backend_options.state_dir = flags.state_dir;
  backend_options.store = store->get();
  backend_options.shim_path = flags.shim;
  backend_options.default_working_dir = flags.workdir;
  auto backend = coach::backend::local::LocalBackend::Create(std::move(backend_options));
  if (!backend.ok()) {
    spdlog::error("local backend: {}", backend.status().ToString());
    return kExitFailure;
  }

  coach::metrics::Registry registry;
  coach::metrics::OperatorMetrics metrics(&registry);
  coach::core::RealClock clock;
  coach::core::WatchBroadcaster watchers;
  watchers.SetObservers([&](size_t n) { metrics.watchers->Set({}, static_cast<double>(n)); },
                        [&] { metrics.watchers_dropped->Add({}); });
  coach::core::KeyedMutex job_locks;
  coach::core::JobService jobs(store->get(), backend->get(), &watchers, &job_locks, &metrics);
  coach::core::Controller::Options controller_options;
  controller_options.workers = flags.workers;
  controller_options.config = config;
  coach::core::Controller controller(store->get(), backend->get(), &jobs, &watchers, &job_locks,
                                     &clock, &metrics, controller_options);

  // Ready only while the API is served: /readyz must not answer 200 before the gRPC port
  // is bound (a client that waited for readiness would get "connection refused").
  std::atomic<bool> serving{false};
  auto http = coach::server::HttpServer::Start(
      flags.http_listen, [&] { return serving.load() && controller.running(); }, &registry);
  if (!http.ok()) {
    spdlog::error("--http-listen: {}", http.status().ToString());
    return kExitFailure;
  }
  if (absl::Status started = controller.Start(); !started.ok()) {
    spdlog::error("backend {}: {}", (*backend)->Name(), started.ToString());
    return kExitFailure;
  }
  coach::server::TrainingServiceImpl service(&jobs, coach::server::TokenAuth(token));
  auto grpc = coach::server::GrpcServer::Start(&service, grpc_options);
  if (!grpc.ok()) {
    spdlog::error("--listen: {}", grpc.status().ToString());
    controller.Stop();
    return kExitFailure;
  }
  serving = true;
  spdlog::info("coach-operator: API on {} ({}{}), HTTP on {}, state in {}, backend {}",
               flags.listen, (*grpc)->tls() ? "TLS" : "plaintext",
               token.empty() ? "" : ", token required", flags.http_listen, flags.state_dir,
               (*backend)->Name());

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("coach-operator: signal {}, shutting down", signal_number);

  // Stop accepting calls and end the streams, finish the reconciles in flight, stop the
  // backend (replicas keep running; a restarted operator re-adopts them).
  serving = false;
  watchers.Shutdown();
  (*grpc)->Shutdown(absl::Seconds(5));
  controller.Stop();
  (*http)->Stop();
  spdlog::info("coach-operator: stopped");
  return 0;
}
