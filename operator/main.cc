// coach-operator: wiring only. Flags (each also from the environment variable shown in
// --help), the store, the backend, the controller, the gRPC API and the HTTP endpoint;
// graceful shutdown on SIGTERM/SIGINT.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "integrations/mlflow/rest_tracking_client.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/cr_job_store.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/leader_election.h"
#include "operator/backend/local/local_backend.h"
#include "operator/backend/local/sqlite_job_store.h"
#include "operator/core/clock.h"
#include "operator/core/controller.h"
#include "operator/core/job_service.h"
#include "operator/metrics/operator_metrics.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/server/grpc_server.h"
#include "operator/server/http_server.h"
#include "operator/server/token_auth.h"
#include "operator/server/training_service_impl.h"
#include "operator/tracking/mlflow_tracker.h"

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
  std::string mlflow_tracking_uri;
  std::string mlflow_experiment;
  bool mlflow_forward_credentials = false;
  double mlflow_run_wait_s = 5;
  double mlflow_max_backoff_s = 30;
  // --backend=kube
  std::string kubeconfig;
  double kube_api_qps = 0;  // auto
  int kube_api_burst = 30;
  double kube_event_qps = 5;
  int kube_event_burst = 25;
  std::string namespaces;
  std::string launcher_image;
  bool leader_elect = false;
  std::string leader_elect_namespace;
  std::string leader_elect_lease_name = "coach-operator";
  std::string leader_elect_lease_duration = "15s";
  std::string leader_elect_renew_deadline = "10s";
  std::string leader_elect_retry_period = "2s";
};

// A Go-style duration ("15s", "1m30s", "500ms"); an error naming the flag.
bool ParseFlagDuration(const std::string& flag, const std::string& value, absl::Duration* out,
                       std::string* error) {
  if (!absl::ParseDuration(value, out) || *out <= absl::ZeroDuration() ||
      *out == absl::InfiniteDuration()) {
    *error = absl::StrCat(flag, ": want a positive duration such as 15s or 1m, got \"", value, "\"");
    return false;
  }
  return true;
}

// A Kubernetes namespace name (RFC 1123 label).
bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}

// The auth/TLS variables of the MLflow client (RestTrackingOptions::FromEnv).
constexpr const char* kMlflowCredentialVars[] = {
    "MLFLOW_TRACKING_USERNAME",       "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",          "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_TRACKING_SERVER_CERT_PATH", "MLFLOW_TRACKING_CLIENT_CERT_PATH"};

// Client options for `uri`, auth and TLS from the MLFLOW_TRACKING_* environment. The tracker
// retries by itself, so the client's own retries are few and its timeouts short.
absl::StatusOr<coach::mlflow::RestTrackingOptions> MlflowOptionsFor(const std::string& uri) {
  absl::StatusOr<coach::mlflow::RestTrackingOptions> options =
      coach::mlflow::RestTrackingOptions::FromEnv([&](const char* name) -> const char* {
        if (std::string(name) == "MLFLOW_TRACKING_URI") return uri.c_str();
        return std::getenv(name);
      });
  if (!options.ok()) return options.status();
  options->retry.max_attempts = 2;
  options->retry.initial_backoff = absl::Milliseconds(200);
  options->retry.max_backoff = absl::Seconds(2);
  options->retry.max_jitter = absl::Milliseconds(200);
  options->request_timeout = absl::Seconds(10);
  options->connect_timeout = absl::Seconds(3);
  return options;
}

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
  app.add_option("--mlflow-tracking-uri", flags.mlflow_tracking_uri,
                 "Track every job in this MLflow server (default: $MLFLOW_TRACKING_URI; jobs "
                 "may also name one with the coach.dev/mlflow-tracking-uri annotation)")
      ->envname("COACH_MLFLOW_TRACKING_URI");
  app.add_option("--mlflow-experiment", flags.mlflow_experiment,
                 "Experiment of tracked jobs without coach.dev/mlflow-experiment (default: "
                 "$MLFLOW_EXPERIMENT_NAME, else coach)")
      ->envname("COACH_MLFLOW_EXPERIMENT");
  app.add_flag("--mlflow-forward-credentials", flags.mlflow_forward_credentials,
               "Pass the operator's MLFLOW_TRACKING_USERNAME/PASSWORD/TOKEN and TLS variables "
               "to tracked replicas (they are stored in the replicas' pod specs)")
      ->envname("COACH_MLFLOW_FORWARD_CREDENTIALS");
  app.add_option("--mlflow-run-wait", flags.mlflow_run_wait_s,
                 "Seconds a new tracked job's first replicas may wait for its MLflow run id "
                 "(0: never; never while the server is failing)")
      ->envname("COACH_MLFLOW_RUN_WAIT")
      ->capture_default_str();
  app.add_option("--mlflow-max-backoff", flags.mlflow_max_backoff_s,
                 "Longest wait between retries of a failing MLflow call, seconds")
      ->envname("COACH_MLFLOW_MAX_BACKOFF")
      ->capture_default_str();
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (--backend=kube); default: in-cluster, else ~/.kube/config")
      ->envname("KUBECONFIG");
  app.add_option("--kube-api-qps", flags.kube_api_qps,
                 "Client-side limit on requests per second to the Kubernetes API server. 0 (auto): "
                 "none once the server shows it enforces API Priority and Fairness (every supported "
                 "Kubernetes does), else 20; > 0: that limit always; < 0: no client-side limit")
      ->envname("COACH_KUBE_API_QPS")
      ->capture_default_str();
  app.add_option("--kube-event-qps", flags.kube_event_qps,
                 "Events per second written to the API server (their own budget, inside "
                 "--kube-api-qps's; similar events waiting for it are combined into one)")
      ->envname("COACH_KUBE_EVENT_QPS")
      ->capture_default_str();
  app.add_option("--kube-event-burst", flags.kube_event_burst, "Events above --kube-event-qps allowed in a burst")
      ->envname("COACH_KUBE_EVENT_BURST")
      ->capture_default_str();
  app.add_option("--kube-api-burst", flags.kube_api_burst,
                 "Requests above the client-side limit allowed in a burst (a fixed --kube-api-qps "
                 "or auto's fallback of 20 qps)")
      ->envname("COACH_KUBE_API_BURST")
      ->capture_default_str();
  app.add_option("--launcher-image", flags.launcher_image,
                 "Image of the init container that installs coach-launch into replicas of jobs "
                 "annotated coach.dev/launcher: \"true\" (--backend=kube; the chart passes the "
                 "operator's own image, with /usr/local/bin/coach-launch)")
      ->envname("COACH_LAUNCHER_IMAGE");
  app.add_option("--namespaces", flags.namespaces,
                 "Comma-separated namespaces whose jobs this operator manages (--backend=kube); "
                 "empty: all")
      ->envname("COACH_NAMESPACES");
  app.add_flag("--leader-elect", flags.leader_elect,
               "Leader election over a coordination.k8s.io Lease (--backend=kube): only the "
               "leader reconciles; every replica serves the API")
      ->envname("COACH_LEADER_ELECT");
  app.add_option("--leader-elect-namespace", flags.leader_elect_namespace,
                 "Namespace of the Lease; default: $POD_NAMESPACE, else default")
      ->envname("COACH_LEADER_ELECT_NAMESPACE");
  app.add_option("--leader-elect-lease-name", flags.leader_elect_lease_name, "Name of the Lease")
      ->envname("COACH_LEADER_ELECT_LEASE_NAME")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-duration", flags.leader_elect_lease_duration,
                 "How long candidates wait after the last renewal before taking over")
      ->envname("COACH_LEADER_ELECT_LEASE_DURATION")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", flags.leader_elect_renew_deadline,
                 "How long the leader retries renewing before it gives up leading")
      ->envname("COACH_LEADER_ELECT_RENEW_DEADLINE")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", flags.leader_elect_retry_period,
                 "Time between acquire/renew attempts")
      ->envname("COACH_LEADER_ELECT_RETRY_PERIOD")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  // --- Validate every flag before touching anything. ---
  const bool kube = flags.backend == "kube";
  if (!kube && flags.backend != "local") {
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
  if (!kube && flags.state_dir.empty()) return Usage("--state-dir: required when $HOME is not set");
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
  if (flags.mlflow_tracking_uri.empty()) {
    if (const char* env = std::getenv("MLFLOW_TRACKING_URI"); env != nullptr) {
      flags.mlflow_tracking_uri = env;
    }
  }
  if (flags.mlflow_experiment.empty()) {
    const char* env = std::getenv("MLFLOW_EXPERIMENT_NAME");
    flags.mlflow_experiment = env != nullptr && *env != '\0' ? env : "coach";
  }
  if (!flags.mlflow_tracking_uri.empty()) {
    if (absl::Status s = coach::reconcile::ValidateTrackingUri(flags.mlflow_tracking_uri);
        !s.ok()) {
      return Usage(absl::StrCat("--mlflow-tracking-uri (or MLFLOW_TRACKING_URI): ", s.message()));
    }
  }
  // Malformed MLFLOW_TRACKING_* variables are a configuration error now, not at the first job.
  if (absl::StatusOr<coach::mlflow::RestTrackingOptions> o = MlflowOptionsFor("http://localhost");
      !o.ok()) {
    return Usage(std::string(o.status().message()));
  }
  if (flags.mlflow_run_wait_s < 0 || flags.mlflow_run_wait_s > 60) {
    return Usage(absl::StrCat("--mlflow-run-wait: must be in 0..60 seconds, got ",
                              flags.mlflow_run_wait_s));
  }
  if (flags.mlflow_max_backoff_s < 0.1 || flags.mlflow_max_backoff_s > 3600) {
    return Usage(absl::StrCat("--mlflow-max-backoff: must be in 0.1..3600 seconds, got ",
                              flags.mlflow_max_backoff_s));
  }
  config.mlflow.tracking_uri = flags.mlflow_tracking_uri;
  // Local replicas find coach-launch on PATH; kube ones get it from the init container.
  if (kube) config.launcher_image = flags.launcher_image;
  config.mlflow.experiment = flags.mlflow_experiment;
  if (flags.mlflow_forward_credentials) {
    for (const char* name : kMlflowCredentialVars) {
      if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
        config.mlflow.forwarded_env.emplace_back(name, v);
      }
    }
  }
  const spdlog::level::level_enum level = spdlog::level::from_str(flags.log_level);
  if (level == spdlog::level::off && flags.log_level != "off") {
    return Usage(absl::StrCat("--log-level: unknown level \"", flags.log_level, "\""));
  }
  std::string error_text;
  spdlog::set_level(level);

  // --backend=kube: API client, namespaces, leader election.
  std::vector<std::string> namespaces;
  coach::backend::kube::LeaderElectionConfig election;
  coach::kube::KubeConfig kube_config;
  if (kube) {
    if (!std::isfinite(flags.kube_api_qps) || flags.kube_api_qps > 100000) {
      return Usage(absl::StrCat("--kube-api-qps: must be a number <= 100000 (0: auto, < 0: no limit), got ",
                                flags.kube_api_qps));
    }
    if (flags.kube_api_burst < 1 || flags.kube_api_burst > 100000) {
      return Usage(absl::StrCat("--kube-api-burst: must be in 1..100000, got ", flags.kube_api_burst));
    }
    if (!(flags.kube_event_qps > 0) || flags.kube_event_qps > 100000) {
      return Usage(absl::StrCat("--kube-event-qps: must be in (0, 100000], got ", flags.kube_event_qps));
    }
    if (flags.kube_event_burst < 1 || flags.kube_event_burst > 100000) {
      return Usage(absl::StrCat("--kube-event-burst: must be in 1..100000, got ", flags.kube_event_burst));
    }
    for (absl::string_view part : absl::StrSplit(flags.namespaces, ',')) {
      const std::string ns(absl::StripAsciiWhitespace(part));
      if (ns.empty()) continue;
      if (!IsDnsLabel(ns)) {
        return Usage(absl::StrCat("--namespaces: \"", ns, "\" is not a namespace name (RFC 1123 label)"));
      }
      namespaces.push_back(ns);
    }
    if (flags.leader_elect) {
      election.lease_namespace = flags.leader_elect_namespace;
      if (election.lease_namespace.empty()) {
        const char* pod_ns = std::getenv("POD_NAMESPACE");
        election.lease_namespace = pod_ns != nullptr && *pod_ns != '\0' ? pod_ns : "default";
      }
      if (!IsDnsLabel(election.lease_namespace)) {
        return Usage(absl::StrCat("--leader-elect-namespace: \"", election.lease_namespace,
                                  "\" is not a namespace name"));
      }
      election.lease_name = flags.leader_elect_lease_name;
      if (election.lease_name.empty()) return Usage("--leader-elect-lease-name: must not be empty");
      if (!ParseFlagDuration("--leader-elect-lease-duration", flags.leader_elect_lease_duration,
                             &election.lease_duration, &error_text) ||
          !ParseFlagDuration("--leader-elect-renew-deadline", flags.leader_elect_renew_deadline,
                             &election.renew_deadline, &error_text) ||
          !ParseFlagDuration("--leader-elect-retry-period", flags.leader_elect_retry_period,
                             &election.retry_period, &error_text)) {
        return Usage(error_text);
      }
      if (election.lease_duration <= election.renew_deadline) {
        return Usage("--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline");
      }
      if (election.renew_deadline <= election.retry_period * 1.2) {
        return Usage("--leader-elect-renew-deadline: must be greater than 1.2 x --leader-elect-retry-period");
      }
      election.identity = coach::backend::kube::DefaultIdentity();
    }
    // Last: every flag is checked before the kubeconfig is read.
    std::string kubeconfig = flags.kubeconfig;
    if (const size_t colon = kubeconfig.find(':'); colon != std::string::npos) {
      kubeconfig = kubeconfig.substr(0, colon);  // $KUBECONFIG may be a list: the first file
    }
    absl::StatusOr<coach::kube::KubeConfig> loaded =
        kubeconfig.empty() ? coach::kube::LoadDefaultConfig() : coach::kube::LoadKubeConfigFile(kubeconfig);
    if (!loaded.ok()) {
      return Usage(absl::StrCat("--kubeconfig (or KUBECONFIG): ", loaded.status().message()));
    }
    kube_config = *std::move(loaded);
  } else if (flags.leader_elect) {
    return Usage("--leader-elect: only with --backend=kube");
  }

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
  if (!kube && flags.shim.empty()) flags.shim = DefaultShimPath();
  if (!kube && access(flags.shim.c_str(), X_OK) != 0) {
    return Usage(absl::StrCat("--shim: ", flags.shim, " is not an executable file"));
  }
  if (!IsLoopback(flags.listen) && (token.empty() || flags.tls_cert.empty())) {
    spdlog::warn("--listen {} is not loopback and the API has {}{}", flags.listen,
                 token.empty() ? "no token" : "a token", flags.tls_cert.empty() ? " but no TLS" : "");
  }
  std::error_code ec;
  if (!kube) {
    if (flags.workdir.empty()) flags.workdir = std::filesystem::current_path(ec).string();
    if (!std::filesystem::is_directory(flags.workdir, ec)) {
      return Usage(absl::StrCat("--workdir: ", flags.workdir, " is not a directory"));
    }
    flags.workdir = std::filesystem::absolute(flags.workdir, ec).string();
    std::filesystem::create_directories(flags.state_dir, ec);
    flags.state_dir = std::filesystem::absolute(flags.state_dir, ec).string();
  }

  // Signals are taken by sigwait() below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // --- Wire. ---
  // The store and backend: sqlite + processes here, or the CRs + pods of a cluster.
  std::unique_ptr<coach::kube::RestKubeClient> kube_client;
  // The backend the event recorder asks whether pods are being created. Declared before the
  // store (whose recorder asks it) and cleared, under its mutex, before the backend goes.
  absl::Mutex creating_mu;
  const coach::backend::kube::KubeBackend* creating = nullptr;
  coach::backend::kube::CrJobStore* cr_store = nullptr;
  std::unique_ptr<coach::backend::local::JobStore> store_owner;
  std::unique_ptr<coach::backend::Backend> backend_owner;
  struct ForgetCreating {  // destroyed before backend_owner, on every way out
    absl::Mutex* mu;
    const coach::backend::kube::KubeBackend** backend;
    ~ForgetCreating() {
      absl::MutexLock lock(mu);
      *backend = nullptr;
    }
  } forget_creating{&creating_mu, &creating};
  if (kube) {
    coach::kube::RestKubeClientOptions client_options;
    // auto: upstream's 20 qps until the server shows API Priority and Fairness (see
    // RestKubeClientOptions::lift_limit_on_apf); < 0 maps to the limiter's "none" (qps <= 0).
    client_options.qps = flags.kube_api_qps == 0 ? coach::kube::kDefaultQps : flags.kube_api_qps;
    client_options.burst = flags.kube_api_burst;
    client_options.lift_limit_on_apf = flags.kube_api_qps == 0;
    auto client = coach::kube::RestKubeClient::Create(kube_config, client_options);
    if (!client.ok()) {
      spdlog::error("--kubeconfig: {}", client.status().ToString());
      return kExitFailure;
    }
    kube_client = *std::move(client);
    coach::backend::kube::CrJobStoreOptions store_options;
    store_options.namespaces = namespaces;
    // Events yield to a burst of pod/service creations (the backend is made below).
    store_options.event_recorder.busy = [&creating_mu, &creating] {
      absl::MutexLock lock(&creating_mu);
      return creating != nullptr && creating->Busy();
    };
    store_options.event_recorder.qps = flags.kube_event_qps;
    store_options.event_recorder.burst = flags.kube_event_burst;
    auto crs = coach::backend::kube::CrJobStore::Create(kube_client.get(), store_options);
    if (!crs.ok()) {
      spdlog::error("job store: {}", crs.status().ToString());
      return kExitFailure;
    }
    cr_store = crs->get();
    store_owner = *std::move(crs);
    coach::backend::kube::KubeBackendOptions backend_options;
    backend_options.client = kube_client.get();
    backend_options.namespaces = namespaces;
    backend_options.gang_scheduler = flags.gang_scheduler;
    auto kb = coach::backend::kube::KubeBackend::Create(std::move(backend_options));
    if (!kb.ok()) {
      spdlog::error("kube backend: {}", kb.status().ToString());
      return kExitFailure;
    }
    {
      absl::MutexLock lock(&creating_mu);
      creating = kb->get();
    }
    backend_owner = *std::move(kb);
  } else {
    auto sqlite = coach::backend::local::SqliteJobStore::Open(flags.state_dir);
    if (!sqlite.ok()) {
      spdlog::error("--state-dir {}: {}", flags.state_dir, sqlite.status().ToString());
      return kExitFailure;
    }
    coach::backend::local::LocalBackendOptions backend_options;
    backend_options.state_dir = flags.state_dir;
    backend_options.store = sqlite->get();
    backend_options.shim_path = flags.shim;
    backend_options.default_working_dir = flags.workdir;
    auto local = coach::backend::local::LocalBackend::Create(std::move(backend_options));
    if (!local.ok()) {
      spdlog::error("local backend: {}", local.status().ToString());
      return kExitFailure;
    }
    store_owner = *std::move(sqlite);
    backend_owner = *std::move(local);
  }
  coach::backend::local::JobStore* const job_store = store_owner.get();
  coach::backend::Backend* const backend_ptr = backend_owner.get();

  coach::metrics::Registry registry;
  coach::metrics::OperatorMetrics metrics(&registry);
  coach::core::RealClock clock;
  coach::core::WatchBroadcaster watchers;
  watchers.SetObservers([&](size_t n) { metrics.watchers->Set({}, static_cast<double>(n)); },
                        [&] { metrics.watchers_dropped->Add({}); });
  coach::core::KeyedMutex job_locks;
  coach::core::JobService::Options job_service_options;
  // On Kubernetes a name is unique per kind only: every job is known by its kind too.
  job_service_options.kind_qualified_keys = kube;
  coach::core::JobService jobs(job_store, backend_ptr, &watchers, &job_locks, &metrics,
                               job_service_options);
  coach::core::Controller::Options controller_options;
  controller_options.workers = flags.workers;
  controller_options.config = config;

  // MLflow: one run per tracked job, off the reconcile path (operator/tracking).
  coach::core::Controller* controller_ptr = nullptr;
  coach::tracking::MlflowTrackerOptions tracker_options;
  tracker_options.mlflow = config.mlflow;
  tracker_options.backend = backend_ptr->Name();
  tracker_options.run_wait = absl::Seconds(flags.mlflow_run_wait_s);
  tracker_options.backoff_cap = absl::Seconds(flags.mlflow_max_backoff_s);
  coach::tracking::MlflowTrackerHooks tracker_hooks;
  tracker_hooks.make_client = [](const std::string& uri)
      -> absl::StatusOr<std::unique_ptr<coach::mlflow::TrackingClient>> {
    absl::StatusOr<coach::mlflow::RestTrackingOptions> options = MlflowOptionsFor(uri);
    if (!options.ok()) return options.status();
    absl::StatusOr<std::unique_ptr<coach::mlflow::RestTrackingClient>> client =
        coach::mlflow::RestTrackingClient::Create(*std::move(options));
    if (!client.ok()) return client.status();
    return std::unique_ptr<coach::mlflow::TrackingClient>(std::move(client).value());
  };
  tracker_hooks.annotate = [&](const coach::model::Job& job,
                                          const std::map<std::string, std::string>& annotations)
      -> absl::Status {
    const coach::backend::local::JobKey key = coach::backend::local::KeyOf(job);
    for (int attempt = 0; attempt < 20; ++attempt) {
      absl::StatusOr<coach::model::Job> got = job_store->Get(key);
      if (!got.ok()) return got.status();
      if (got->metadata().uid() != job.metadata().uid()) {
        return absl::NotFoundError("the job was replaced");
      }
      bool changed = false;
      auto* stored = got->mutable_metadata()->mutable_annotations();
      for (const auto& [k, v] : annotations) {
        auto it = stored->find(k);
        if (it == stored->end() || it->second != v) {
          (*stored)[k] = v;
          changed = true;
        }
      }
      if (!changed) return absl::OkStatus();
      absl::StatusOr<coach::model::Job> updated = job_store->Update(*got);
      if (absl::IsAborted(updated.status())) continue;  // the controller wrote meanwhile
      if (!updated.ok()) return updated.status();
      watchers.Publish(coach::core::WatchEventType::kModified, *updated);
      if (controller_ptr != nullptr) controller_ptr->Enqueue(key);
      return absl::OkStatus();
    }
    return absl::AbortedError("the job kept changing");
  };
  tracker_hooks.wake = [&](const coach::model::Job& job) {
    if (controller_ptr != nullptr) controller_ptr->Enqueue(coach::backend::local::KeyOf(job));
  };
  tracker_hooks.read_logs = [backend_ptr](const coach::model::Job& job, int64_t max_bytes)
      -> absl::StatusOr<std::map<std::string, std::string>> {
    std::map<std::string, std::string> logs;
    std::atomic<bool> cancelled{false};
    absl::Status s = backend_ptr->StreamLogs(
        job, coach::backend::LogOptions{}, [&](const std::string& replica, const std::string& data) {
          std::string& log = logs[replica];
          log += data;
          // Keep the end: that is where a failure explains itself.
          if (static_cast<int64_t>(log.size()) > 2 * max_bytes) {
            log.erase(0, log.size() - static_cast<size_t>(max_bytes));
          }
          return true;
        },
        cancelled);
    if (!s.ok()) return s;
    for (auto& [replica, log] : logs) {
      if (static_cast<int64_t>(log.size()) > max_bytes) {
        log.erase(0, log.size() - static_cast<size_t>(max_bytes));
      }
    }
    return logs;
  };
  coach::tracking::MlflowTracker tracker(tracker_options, tracker_hooks, &clock, &registry);
  controller_options.observer = &tracker;
  jobs.SetObserver(&tracker);
  // On Kubernetes every change, the controller's status writes included, reaches the API's
  // watchers from the CR watch (below): once, on the leader and on the others alike.
  coach::core::WatchBroadcaster controller_only;
  coach::core::Controller controller(job_store, backend_ptr, &jobs,
                                     kube ? &controller_only : &watchers, &job_locks, &clock,
                                     &metrics, controller_options);
  controller_ptr = &controller;
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
  auto http = coach::server::HttpServer::Start(
      flags.http_listen,
      [&] {
        // A replica that waits for the lease serves the API and is ready; the leader is
        // ready once its controller runs.
        return serving.load() &&
               (controller.running() || (elector != nullptr && !elector->IsLeader()));
      },
      &registry);
  if (!http.ok()) {
    spdlog::error("--http-listen: {}", http.status().ToString());
    return kExitFailure;
  }
  if (cr_store != nullptr) {
    // Jobs created, changed or deleted by anyone (kubectl included): reconcile them and tell
    // the API's watchers. A deleted job's controller pass finds it gone and forgets it; its
    // pods and services go with it by owner reference (garbage collector).
    absl::Status watching = cr_store->StartWatching([&](const coach::backend::kube::JobChange& c) {
      // The kind too: a PyTorchJob and a TFJob of one name are two jobs (and the plain name
      // of either would name neither).
      controller.Enqueue(c.qualified_key);
      if (!c.job.has_value()) return;
      const coach::core::WatchEventType type =
          c.type == coach::backend::kube::JobChangeType::kAdded      ? coach::core::WatchEventType::kAdded
          : c.type == coach::backend::kube::JobChangeType::kModified ? coach::core::WatchEventType::kModified
                                                                      : coach::core::WatchEventType::kDeleted;
      watchers.Publish(type, *c.job);
    });
    if (!watching.ok()) {
      spdlog::error("job watch: {}", watching.ToString());
      return kExitFailure;
    }
    if (!cr_store->WaitForSync(absl::Seconds(60))) {
      spdlog::warn("job watch: not every kind listed within 60s (are coach's CRDs installed? "
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
    auto made = coach::backend::kube::LeaderElector::Create(kube_client.get(), election);
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
               token.empty() ? "" : ", token required", flags.http_listen,
               kube ? "the API server" : flags.state_dir, backend_ptr->Name());

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
  controller.Stop();
  // Release the lease only once this controller has stopped: never two at once.
  if (elector != nullptr) elector->Stop();
  if (cr_store != nullptr) cr_store->StopWatching();
  // A moment for runs to record what just happened; the rest resumes after a restart.
  tracker.Stop(absl::Seconds(2));
  jobs.SetObserver(nullptr);
  (*http)->Stop();
  spdlog::info("coach-operator: stopped");
  return exit_code.load();
}
