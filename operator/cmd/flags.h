// The operator's command line: every flag (each also from the environment variable shown
// in --help) with its default, before any validation (see settings.h).

#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "integrations/karpenter/config.h"

namespace coach::cmd {

struct Flags {
  std::string backend = "local";
  std::string listen = "127.0.0.1:7450";
  std::string http_listen = "127.0.0.1:7451";
  std::string probe_listen;  // empty: the probes use --http-listen
  std::string state_dir;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string token_file;
  std::string api_auth;  // none | token | kubernetes; empty: token with --token-file, else none
  int workers = 2;
  std::string gang_scheduler = "none";
  std::string log_level = "info";
  std::string shim;
  std::string workdir;
  std::string training_runtimes;  // --backend=local: a directory of Trainer v2 runtimes
  std::string mlflow_tracking_uri;
  std::vector<std::string> mlflow_allowed_tracking_uris;
  std::string mlflow_experiment;
  bool mlflow_forward_credentials = false;
  double mlflow_run_wait_s = 120;
  double mlflow_max_backoff_s = 30;
  coach::karpenter::ConfigFlags karpenter;  // --karpenter*
  // --backend=kube
  std::string kubeconfig;
  double kube_api_qps = 0;  // auto
  int kube_api_burst = 30;
  double kube_event_qps = 50;
  int kube_event_burst = 100;
  double kube_event_shutdown_grace_s = 20;
  std::string lost_node_grace = "2m";
  std::string in_place_restart_timeout = "60s";
  std::string namespaces;
  std::string launcher_image;
  bool pytorch_wait_for_master = true;
  std::string pytorch_init_container_image;  // empty: launcher_image
  int pytorch_init_container_max_tries = 100;
  std::string pytorch_restart_scope = "Replica";
  std::string mpi_kubectl_delivery_image;  // empty: upstream's image
  std::string progress_report_address;     // empty: replicas do not report progress
  std::string progress_report_ca_file;
  bool leader_elect = false;
  std::string leader_elect_namespace;
  std::string leader_elect_lease_name = "coach-operator";
  std::string leader_elect_lease_duration = "15s";
  std::string leader_elect_renew_deadline = "10s";
  std::string leader_elect_retry_period = "2s";
  // Admission webhooks (--backend=kube; validate_webhook.cc).
  std::string webhook_listen;  // empty: none
  std::string webhook_cert_dir;
  std::string webhook_secret;   // NAMESPACE/NAME
  std::string webhook_service;  // NAMESPACE/NAME
  std::string webhook_extra_names;
  std::string webhook_mutating_configuration;
  std::string webhook_validating_configuration;
  std::string webhook_client_ca;
  // The history store (validate_history.cc; docs/history.md); empty endpoint: none.
  std::string history_s3_endpoint;
  std::string history_s3_bucket;
  std::string history_s3_region = "us-east-1";
  std::string history_s3_prefix = "coach/";
  std::string history_s3_ca_file;
  int64_t history_max_log_bytes = 8 << 20;
  double history_retention_hours = 720;
};

// The defaults that depend on the environment: --state-dir under $HOME. Taken before
// RegisterFlags so that --help shows them.
Flags DefaultFlags();

// Adds every flag to `app`, bound to `flags` (which must outlive the parse).
void RegisterFlags(CLI::App* app, Flags* flags);

// Parses the command line into `flags`, which holds the defaults (DefaultFlags). When the
// process is to end at once, returns its exit code, the message printed: 0 after --help or
// --version, kExitUsage (exit_codes.h) after a parse error.
std::optional<int> ParseCommandLine(int argc, char** argv, Flags* flags);

}  // namespace coach::cmd
