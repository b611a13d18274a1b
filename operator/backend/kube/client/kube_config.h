#pragma once

// Where the API server is and how to authenticate: from a kubeconfig file or from the
// in-cluster service account.
//
// Kubeconfig fields read (others are ignored, as kubectl does for unknown ones):
//   current-context; contexts[].{name, context.{cluster, user, namespace}};
//   clusters[].{name, cluster.{server, certificate-authority, certificate-authority-data,
//     insecure-skip-tls-verify, tls-server-name}};
//   users[].{name, user.{client-certificate, client-certificate-data, client-key,
//     client-key-data, token, tokenFile}}.
// Relative file paths are relative to the kubeconfig's directory. *-data fields are base64.
// Unsupported auth (exec, auth-provider, username/password) is InvalidArgument naming the field.
// Validation errors are InvalidArgument and name the field, e.g.
// `kubeconfig /x/config: users[0].user.client-key-data: invalid base64`.

#include <ctime>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::kubeclient {

struct KubeConfig {
  std::string server;  // "https://127.0.0.1:6443" (no trailing slash)
  // Trust: PEM bytes (from certificate-authority-data or ca.crt) or a file; neither = the
  // system trust store. insecure_skip_tls_verify turns verification off (never the default).
  std::string ca_pem;
  std::string ca_file;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  // Client certificate: PEM bytes or files.
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;
  // Bearer token: literal, or a file re-read when it changes (service-account rotation).
  std::string token;
  std::string token_file;
  // The context's namespace, or the service account's; "default" when none.
  std::string default_namespace = "default";
  // Where this came from, for messages ("kubeconfig /path context x", "in-cluster").
  std::string source;
};

// Parses kubeconfig YAML. `context` empty = current-context. `base_dir` resolves relative
// paths; `origin` names the file in messages. Referenced files are not read here (the client
// reads them when it is created, the token file on every request).
absl::StatusOr<KubeConfig> ParseKubeConfig(const std::string& yaml, const std::string& context = "",
                                           const std::string& base_dir = "",
                                           const std::string& origin = "kubeconfig");

// Reads and parses a kubeconfig file. NotFound: no such file.
absl::StatusOr<KubeConfig> LoadKubeConfigFile(const std::string& path,
                                              const std::string& context = "");

struct InClusterOptions {
  // Where the service-account files are (token, ca.crt, namespace).
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // Overrides for KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT (tests); empty = the env.
  std::string host;
  std::string port;
};

// The in-cluster config: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6
// hosts bracketed), token_file = DIR/token, ca_file = DIR/ca.crt, namespace from DIR/namespace.
// NotFound: not running in a cluster (env unset or no token file).
absl::StatusOr<KubeConfig> InClusterConfig(const InClusterOptions& options = {});

// kubeconfig path given (explicit), else $KUBECONFIG (first entry), else in-cluster, else
// ~/.kube/config. NotFound when none applies.
absl::StatusOr<KubeConfig> LoadDefaultConfig(const std::string& kubeconfig_path = "",
                                             const std::string& context = "");

// The bearer token of a config: the literal token, or the token file re-read whenever its
// mtime or size changes (checked at most every `recheck`, default every call). Thread-safe.
class TokenSource {
 public:
  explicit TokenSource(const KubeConfig& config, absl::Duration recheck = absl::ZeroDuration(),
                       Clock* clock = Clock::Real());
  // "" when the config has no token. Unavailable when the file cannot be read (and no
  // earlier read succeeded).
  absl::StatusOr<std::string> Token();
  // Forces a re-read on the next call (after a 401).
  void Invalidate();

 private:
  const std::string literal_;
  const std::string file_;
  const absl::Duration recheck_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::string cached_ ABSL_GUARDED_BY(mu_);
  struct timespec mtime_ ABSL_GUARDED_BY(mu_) = {0, 0};
  long long size_ ABSL_GUARDED_BY(mu_) = -1;
  absl::Time checked_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace coach::kubeclient
