#pragma once

// How the SDK reaches coach-operator: address, bearer token and TLS material, taken from
// explicit options first and the environment second, validated before any RPC is made.
//
// Environment (used only for a field the options leave empty):
//   COACH_SERVER           address, default 127.0.0.1:7450 ("host:port", "dns:///...", "unix:...")
//   COACH_TOKEN            bearer token, sent as `authorization: Bearer <token>`
//   COACH_TOKEN_FILE       file holding the token (COACH_TOKEN wins when both are set)
//   COACH_STATE_DIR, HOME  with neither token given and a server on this host (loopback or
//                          unix:), the local operator's own token: COACH_STATE_DIR/api-token,
//                          else $HOME/.local/state/coach/api-token, when this user can read it
//   COACH_TLS_CA           CA bundle (PEM); setting it enables TLS
//   COACH_TLS_CERT/KEY     client certificate and key (PEM) for mutual TLS; both or neither
//   COACH_TLS_SERVER_NAME  overrides the name checked against the server's certificate
//
// The token is a secret: no error message, log line or DebugString() carries it.

#include <grpcpp/channel.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace coach::sdk {

inline constexpr char kDefaultServer[] = "127.0.0.1:7450";

// What a caller (or the CLI's flags) asks for. Empty strings mean "not given here".
struct ConnectionOptions {
  std::string server;           // --server
  std::string token;            // the token itself (SDK callers only; never a flag)
  std::string token_file;       // --token-file
  std::string tls_ca;           // --tls-ca: path of a PEM CA bundle; enables TLS
  std::string tls_cert;         // --tls-cert: path of the client certificate (PEM)
  std::string tls_key;          // --tls-key: path of the client private key (PEM)
  std::string tls_server_name;  // --tls-server-name
  bool use_tls = false;         // TLS with the system's roots when no CA is given
  // Deadline of each unary call; streaming calls take their own (see TrainingClient).
  absl::Duration call_timeout = absl::Seconds(30);
  // Whether COACH_* variables fill the fields left empty.
  bool use_environment = true;
};

// Resolved, validated settings: file contents loaded, defaults applied.
struct ConnectionSettings {
  std::string server;
  std::string token;  // secret; empty: no authorization metadata is sent
  bool tls = false;
  std::string ca_pem;  // empty with tls: the system's roots
  std::string cert_pem;
  std::string key_pem;
  std::string server_name;
  absl::Duration call_timeout = absl::Seconds(30);

  // "127.0.0.1:7450 (tls, mutual, token)"; never the token itself.
  std::string DebugString() const;
};

// Returns the value of an environment variable, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Reads the process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// Merges options over the environment and loads the files they name.
// InvalidArgument, naming the flag or variable: an unreadable or empty file (token, CA,
// certificate, key), a certificate without its key or a key without its certificate,
// a token holding whitespace or control characters, an address with whitespace, a
// non-positive call_timeout.
absl::StatusOr<ConnectionSettings> ResolveConnection(const ConnectionOptions& options,
                                                     const EnvLookup& env = ProcessEnv);

// A channel for `settings` (TLS credentials when settings.tls). Connects lazily, so an
// unreachable server shows up as UNAVAILABLE on the first call, not here.
// InvalidArgument when gRPC rejects the credentials.
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const ConnectionSettings& settings);

}  // namespace coach::sdk
