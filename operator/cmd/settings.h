// What the flags mean once checked: the reconcile configuration, the API server's options
// and, with --backend=kube, the cluster's. Validate reads files and the environment but
// starts nothing.

#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "integrations/s3/s3_object_store.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/leader_election.h"
#include "operator/cmd/flags.h"
#include "operator/model/reconcile_types.h"
#include "operator/server/grpc_server.h"
#include "operator/webhook/cert_rotator.h"

namespace coach::cmd {

struct Settings {
  bool kube = false;  // --backend=kube (else local)
  coach::model::ReconcileConfig config;
  coach::server::GrpcServerOptions grpc_options;
  std::string token;  // --token-file's content, or the own token's; empty: none required
  // --api-auth resolved: "none", "token" (the shared token) or "kubernetes".
  std::string api_auth = "none";
  // Local backend, token mode without --token-file: <state-dir>/api-token, made on first
  // start with mode 0600, which the CLI of the same user reads (sdk/cpp/connection.h).
  std::string own_token_file;
  // --backend=kube only.
  std::vector<std::string> namespaces;                  // empty: all
  coach::backend::kube::LeaderElectionConfig election;  // with --leader-elect
  coach::kubeclient::KubeConfig kube_config;
  // --webhook-* (validate_webhook.cc); listen empty: no webhooks.
  struct Webhook {
    std::string listen;
    std::string cert_dir;                        // tls.crt + tls.key, someone else's
    coach::webhook::CertRotatorOptions rotator;  // else: the operator's own, in a Secret
    std::string client_ca_pem;                   // empty: any client
  } webhook;
  // --history-* (validate_history.cc).
  struct History {
    bool store = false;  // --history-s3-endpoint given
    coach::s3::S3Options s3;
    std::string prefix;
    int64_t max_log_bytes = 8 << 20;
    absl::Duration retention = absl::Hours(720);
  } history;
};

// Checks every flag and fills `settings`; completes `flags` with the defaults that need the
// environment (MLflow, --shim, --workdir) and makes --workdir and --state-dir absolute.
// Sets spdlog's level. An InvalidArgument error's message is the usage error to print.
absl::Status Validate(Flags* flags, Settings* settings);

// Validate's part for --backend=kube (validate_kube.cc); reads the kubeconfig last.
absl::Status ValidateKubeFlags(const Flags& flags, Settings* settings);

// Validate's part for --webhook-* (validate_webhook.cc); `kube`: --backend=kube.
absl::Status ValidateWebhookFlags(const Flags& flags, bool kube, Settings* settings);

// Validate's part for --history-* (validate_history.cc); reads AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY when a store is named.
absl::Status ValidateHistoryFlags(const Flags& flags, Settings* settings);

// Validate's part for --progress-report-address and --progress-report-ca-file
// (validate_progress.cc); `kube`: --backend=kube. Fills the config's progress_report_*.
absl::Status ValidateProgressReportFlags(const Flags& flags, bool kube, Settings* settings);

// The PEM certificate(s) in the file a flag names: the usage error "<flag>: cannot read <path>"
// or "<flag>: <path> holds no PEM certificate".
absl::Status ReadCertificatesFlag(const char* flag, const std::string& path, std::string* pem);

// The usage error Validate returns.
absl::Status UsageError(absl::string_view message);

}  // namespace coach::cmd
