// Validate: every flag is checked, in the order of --help's sections, before anything is
// started; the first bad one is the usage error.

#include <limits.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "operator/cmd/mlflow_client.h"
#include "operator/cmd/settings.h"
#include "operator/reconcile/mlflow_env.h"
#include "operator/server/http_server.h"
#include "operator/server/tls_material.h"
#include "operator/server/token_auth.h"

namespace coach::cmd {
namespace {

// The auth/TLS variables of the MLflow client (RestTrackingOptions::FromEnv).
constexpr const char* kMlflowCredentialVars[] = {"MLFLOW_TRACKING_USERNAME",
                                                 "MLFLOW_TRACKING_PASSWORD",
                                                 "MLFLOW_TRACKING_TOKEN",
                                                 "MLFLOW_TRACKING_INSECURE_TLS",
                                                 "MLFLOW_TRACKING_SERVER_CERT_PATH",
                                                 "MLFLOW_TRACKING_CLIENT_CERT_PATH"};

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
  return host == "127.0.0.1" || host == "::1" || host == "localhost" || host.rfind("127.", 0) == 0;
}

bool IsWildcardHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "*";
}

// --probe-listen: a host:port of its own. The same port as another listener on an
// overlapping address would only fail later, when binding, with a less helpful message.
absl::Status ValidateProbeListen(const Flags& flags) {
  if (flags.probe_listen.empty()) return absl::OkStatus();
  std::string host;
  int port;
  if (absl::Status s = coach::server::SplitHostPort(flags.probe_listen, &host, &port); !s.ok()) {
    return UsageError(absl::StrCat("--probe-listen: ", s.message()));
  }
  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--listen", flags.listen},
                                    {"--http-listen", flags.http_listen}}) {
    std::string other_host;
    int other_port;
    if (!coach::server::SplitHostPort(value, &other_host, &other_port).ok()) continue;
    if (port != 0 && port == other_port &&
        (host == other_host || IsWildcardHost(host) || IsWildcardHost(other_host))) {
      return UsageError(absl::StrCat("--probe-listen: \"", flags.probe_listen, "\" overlaps ", flag,
                                     " (", value, ")"));
    }
  }
  return absl::OkStatus();
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
        std::filesystem::path(std::string(exe) + ".runfiles") / "coach" / "operator" / "backend" /
            "local" / "coach-replica-shim",
        self.parent_path() / "backend" / "local" / "coach-replica-shim"}) {
    if (std::filesystem::exists(candidate)) return candidate.string();
  }
  return (self.parent_path() / "coach-replica-shim").string();
}

// --api-auth and --token-file together. The default authenticates: on Kubernetes as the API
// server does; on the local backend with a token only the operator's user can read, so that
// another user of the host cannot run replicas as this one.
absl::Status ValidateApiAuth(const Flags& flags, bool kube, Settings* settings) {
  const bool has_token = !settings->token.empty();
  const std::string mode =
      !flags.api_auth.empty() ? flags.api_auth : (kube && !has_token ? "kubernetes" : "token");
  if (mode != "none" && mode != "token" && mode != "kubernetes") {
    return UsageError(
        absl::StrCat("--api-auth: must be none, token or kubernetes, got \"", mode, "\""));
  }
  if (mode == "token" && !has_token) {
    if (kube) return UsageError("--api-auth=token: needs --token-file");
    settings->own_token_file = flags.state_dir + "/api-token";
  }
  if (mode != "token" && has_token) {
    return UsageError(absl::StrCat("--token-file: not used with --api-auth=", mode));
  }
  if (mode == "kubernetes" && !kube) {
    return UsageError(
        "--api-auth=kubernetes: needs --backend=kube (the local backend has no Kubernetes "
        "users; use --api-auth=token)");
  }
  if (mode == "none") {
    spdlog::warn("--api-auth=none: anyone who can reach {} may {}", flags.listen,
                 kube ? "act with the operator's Kubernetes rights in every namespace it serves"
                      : "run commands as this operator's user");
  }
  settings->api_auth = mode;
  return absl::OkStatus();
}

}  // namespace

absl::Status UsageError(absl::string_view message) { return absl::InvalidArgumentError(message); }

absl::Status Validate(Flags* mutable_flags, Settings* settings) {
  Flags& flags = *mutable_flags;
  const bool kube = flags.backend == "kube";
  settings->kube = kube;
  if (!kube && flags.backend != "local") {
    return UsageError(
        absl::StrCat("--backend: must be local or kube, got \"", flags.backend, "\""));
  }
  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--listen", flags.listen},
                                    {"--http-listen", flags.http_listen}}) {
    std::string host;
    int port;
    if (absl::Status s = coach::server::SplitHostPort(value, &host, &port); !s.ok()) {
      return UsageError(absl::StrCat(flag, ": ", s.message()));
    }
  }
  if (absl::Status s = ValidateProbeListen(flags); !s.ok()) return s;
  if (!kube && flags.state_dir.empty())
    return UsageError("--state-dir: required when $HOME is not set");
  if (flags.workers < 1 || flags.workers > 256) {
    return UsageError(absl::StrCat("--workers: must be in 1..256, got ", flags.workers));
  }
  coach::model::ReconcileConfig& config = settings->config;
  absl::StatusOr<coach::model::GangScheduler> gang =
      coach::model::ParseGangScheduler(flags.gang_scheduler);
  if (!gang.ok()) return UsageError(absl::StrCat("--gang-scheduler: ", gang.status().message()));
  config.gang_scheduler = *gang;
  absl::StatusOr<coach::karpenter::Config> karpenter =
      coach::karpenter::ConfigFromFlags(flags.karpenter);
  if (!karpenter.ok()) return UsageError(karpenter.status().message());
  config.karpenter = *karpenter;
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
      return UsageError(
          absl::StrCat("--mlflow-tracking-uri (or MLFLOW_TRACKING_URI): ", s.message()));
    }
  }
  for (const std::string& uri : flags.mlflow_allowed_tracking_uris) {
    coach::model::MlflowConfig only;
    only.allowed_tracking_uris = {uri};
    absl::Status s = coach::reconcile::ValidateTrackingUri(uri);
    if (s.ok()) {
      const std::string problem = coach::reconcile::JobTrackingUriProblem(uri, only);
      if (!problem.empty()) s = absl::InvalidArgumentError(problem);
    }
    if (!s.ok()) return UsageError(absl::StrCat("--mlflow-allowed-tracking-uris: ", s.message()));
    config.mlflow.allowed_tracking_uris.push_back(uri);
  }
  // Malformed MLFLOW_TRACKING_* variables are a configuration error now, not at the first job.
  if (absl::StatusOr<coach::mlflow::RestTrackingOptions> o = MlflowOptionsFor("http://localhost");
      !o.ok()) {
    return UsageError(std::string(o.status().message()));
  }
  // Up to an hour: longer would let a dead server keep every new job from starting.
  if (!(flags.mlflow_run_wait_s >= 0 && flags.mlflow_run_wait_s <= 3600)) {
    return UsageError(absl::StrCat("--mlflow-run-wait: must be in 0..3600 seconds, got ",
                                   flags.mlflow_run_wait_s));
  }
  if (flags.mlflow_max_backoff_s < 0.1 || flags.mlflow_max_backoff_s > 3600) {
    return UsageError(absl::StrCat("--mlflow-max-backoff: must be in 0.1..3600 seconds, got ",
                                   flags.mlflow_max_backoff_s));
  }
  config.mlflow.tracking_uri = flags.mlflow_tracking_uri;
  // Local replicas find coach-launch on PATH; kube ones get it from the init container.
  if (kube) config.launcher_image = flags.launcher_image;
  if (flags.pytorch_init_container_max_tries < 1 ||
      flags.pytorch_init_container_max_tries > 10000) {
    return UsageError(absl::StrCat("--pytorch-init-container-max-tries: must be in 1..10000, got ",
                                   flags.pytorch_init_container_max_tries));
  }
  if (flags.pytorch_restart_scope != "Replica" && flags.pytorch_restart_scope != "Job") {
    return UsageError(absl::StrCat("--pytorch-restart-scope: must be Replica or Job, got \"",
                                   flags.pytorch_restart_scope, "\""));
  }
  config.pytorch_job_scope_default = flags.pytorch_restart_scope == "Job";
  if (kube && flags.pytorch_wait_for_master) {
    config.pytorch_init_image = flags.pytorch_init_container_image.empty()
                                    ? flags.launcher_image
                                    : flags.pytorch_init_container_image;
    config.pytorch_init_max_tries = flags.pytorch_init_container_max_tries;
  }
  if (!flags.mpi_kubectl_delivery_image.empty()) {
    if (flags.mpi_kubectl_delivery_image.find_first_of(" \t\r\n") != std::string::npos) {
      return UsageError(absl::StrCat("--mpi-kubectl-delivery-image: not an image reference: \"",
                                     flags.mpi_kubectl_delivery_image, "\""));
    }
    config.mpi_kubectl_delivery_image = flags.mpi_kubectl_delivery_image;
  }
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
    return UsageError(absl::StrCat("--log-level: unknown level \"", flags.log_level, "\""));
  }
  spdlog::set_level(level);

  coach::server::GrpcServerOptions& grpc_options = settings->grpc_options;
  grpc_options.listen = flags.listen;
  std::string error;
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return UsageError("--tls-cert and --tls-key: give both or neither");
  }
  if (!flags.tls_client_ca.empty() && flags.tls_cert.empty()) {
    return UsageError("--tls-client-ca: needs --tls-cert and --tls-key");
  }
  if (!flags.tls_cert.empty() &&
      (!ReadFlagFile("--tls-cert", flags.tls_cert, &grpc_options.tls_cert_pem, &error) ||
       !ReadFlagFile("--tls-key", flags.tls_key, &grpc_options.tls_key_pem, &error))) {
    return UsageError(error);
  }
  if (!flags.tls_client_ca.empty() && !ReadFlagFile("--tls-client-ca", flags.tls_client_ca,
                                                    &grpc_options.tls_client_ca_pem, &error)) {
    return UsageError(error);
  }
  if (!flags.tls_cert.empty()) {
    absl::Status material = coach::server::CheckTlsMaterial(
        grpc_options.tls_cert_pem, grpc_options.tls_key_pem, grpc_options.tls_client_ca_pem);
    if (!material.ok()) {
      const absl::string_view message = material.message();
      const char* flag = absl::StartsWith(message, "key")         ? "--tls-key"
                         : absl::StartsWith(message, "client CA") ? "--tls-client-ca"
                                                                  : "--tls-cert";
      // "key: it is not ..." -> "--tls-key: it is not ...".
      return UsageError(absl::StrCat(flag, ": ", message.substr(message.find(": ") + 2)));
    }
  }
  if (absl::Status s = ValidateProgressReportFlags(flags, kube, settings); !s.ok()) return s;
  if (absl::Status s = ValidateHistoryFlags(flags, settings); !s.ok()) return s;
  if (absl::Status s = ValidateWebhookFlags(flags, kube, settings); !s.ok()) return s;
  std::string& token = settings->token;
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> read = coach::server::ReadTokenFile(flags.token_file);
    if (!read.ok()) return UsageError(absl::StrCat("--token-file: ", read.status().message()));
    token = *read;
  }
  if (absl::Status s = ValidateApiAuth(flags, kube, settings); !s.ok()) return s;
  // --backend=kube: API client, namespaces, leader election; the kubeconfig is read last.
  if (kube) {
    if (absl::Status s = ValidateKubeFlags(flags, settings); !s.ok()) return s;
  } else if (flags.leader_elect) {
    return UsageError("--leader-elect: only with --backend=kube");
  }
  if (!kube && flags.shim.empty()) flags.shim = DefaultShimPath();
  if (!kube && access(flags.shim.c_str(), X_OK) != 0) {
    return UsageError(absl::StrCat("--shim: ", flags.shim, " is not an executable file"));
  }
  if (!IsLoopback(flags.listen) && (settings->api_auth == "none" || flags.tls_cert.empty())) {
    spdlog::warn("--listen {} is not loopback and the API has {}{}", flags.listen,
                 settings->api_auth == "none" ? "no authentication" : "authentication",
                 flags.tls_cert.empty() ? " but no TLS" : "");
  }
  std::error_code ec;
  if (kube && !flags.training_runtimes.empty()) {
    return UsageError(
        "--training-runtimes: only with --backend=local (on Kubernetes the runtimes are the "
        "cluster's ClusterTrainingRuntime and TrainingRuntime objects)");
  }
  if (!kube) {
    if (flags.workdir.empty()) flags.workdir = std::filesystem::current_path(ec).string();
    if (!std::filesystem::is_directory(flags.workdir, ec)) {
      return UsageError(absl::StrCat("--workdir: ", flags.workdir, " is not a directory"));
    }
    flags.workdir = std::filesystem::absolute(flags.workdir, ec).string();
    if (!flags.training_runtimes.empty()) {
      if (!std::filesystem::is_directory(flags.training_runtimes, ec)) {
        return UsageError(
            absl::StrCat("--training-runtimes: ", flags.training_runtimes, " is not a directory"));
      }
      flags.training_runtimes = std::filesystem::absolute(flags.training_runtimes, ec).string();
    }
    std::filesystem::create_directories(flags.state_dir, ec);
    flags.state_dir = std::filesystem::absolute(flags.state_dir, ec).string();
    if (!settings->own_token_file.empty()) {
      settings->own_token_file = flags.state_dir + "/api-token";
      absl::StatusOr<std::string> own = coach::server::EnsureOwnTokenFile(settings->own_token_file);
      if (!own.ok()) return UsageError(absl::StrCat("--api-auth=token: ", own.status().message()));
      settings->token = *own;
    }
  }
  return absl::OkStatus();
}

}  // namespace coach::cmd
