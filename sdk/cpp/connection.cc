#include "sdk/cpp/connection.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"

namespace coach::sdk {
namespace {

// One setting's value and where it came from, so errors can name the flag or variable.
struct Sourced {
  std::string value;
  std::string source;
};

Sourced Pick(const std::string& option_value, const char* flag, const char* variable,
             const ConnectionOptions& options, const EnvLookup& env) {
  if (!option_value.empty()) return {option_value, flag};
  if (options.use_environment) {
    std::optional<std::string> value = env(variable);
    if (value.has_value() && !value->empty()) return {*value, variable};
  }
  return {"", ""};
}

absl::StatusOr<std::string> ReadNonEmptyFile(const Sourced& path) {
  std::ifstream in(path.value, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.source, ": cannot read ", path.value, ": ", std::strerror(errno)));
  }
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (contents.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path.source, ": ", path.value, " is empty"));
  }
  return contents;
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Token files usually end with a newline; anything else odd would corrupt the header.
absl::StatusOr<std::string> CleanToken(std::string token, const std::string& source) {
  while (!token.empty() && IsSpace(token.back())) token.pop_back();
  size_t start = 0;
  while (start < token.size() && IsSpace(token[start])) ++start;
  token.erase(0, start);
  if (token.empty())
    return absl::InvalidArgumentError(absl::StrCat(source, ": the token is empty"));
  for (char c : token) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": the token holds whitespace or control characters"));
    }
  }
  return token;
}

// An address on this host: the only kind the local operator's own token is sent to.
bool IsLocalAddress(absl::string_view server) {
  absl::ConsumePrefix(&server, "dns:///");
  absl::ConsumePrefix(&server, "ipv4:");
  absl::ConsumePrefix(&server, "ipv6:");
  if (absl::StartsWith(server, "unix:")) return true;
  for (absl::string_view host : {"127.0.0.1:", "localhost:", "[::1]:"}) {
    if (absl::StartsWith(server, host)) return true;
  }
  return false;
}

// The local operator's own token (<state-dir>/api-token, mode 0600), where this user's
// operator keeps it by default. Absent or unreadable (another user's): no token.
absl::StatusOr<std::string> LocalOperatorToken(const EnvLookup& env) {
  std::string state_dir;
  if (std::optional<std::string> dir = env("COACH_STATE_DIR"); dir && !dir->empty()) {
    state_dir = *dir;
  } else if (std::optional<std::string> home = env("HOME"); home && !home->empty()) {
    state_dir = *home + "/.local/state/coach";
  } else {
    return std::string();
  }
  const std::string path = state_dir + "/api-token";
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string();
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (contents.empty()) return std::string();
  return CleanToken(contents, path);
}

}  // namespace

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string ConnectionSettings::DebugString() const {
  std::vector<std::string> traits;
  traits.push_back(tls ? "tls" : "plaintext");
  if (!cert_pem.empty()) traits.push_back("mutual");
  if (!server_name.empty()) traits.push_back("server name " + server_name);
  if (!token.empty()) traits.push_back("token");
  return absl::StrCat(server, " (", absl::StrJoin(traits, ", "), ")");
}

absl::StatusOr<ConnectionSettings> ResolveConnection(const ConnectionOptions& options,
                                                     const EnvLookup& env) {
  ConnectionSettings settings;
  if (options.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("call_timeout must be positive");
  }
  settings.call_timeout = options.call_timeout;

  Sourced server = Pick(options.server, "--server", "COACH_SERVER", options, env);
  settings.server = server.value.empty() ? kDefaultServer : server.value;
  for (char c : settings.server) {
    if (IsSpace(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat(server.source, ": the address holds whitespace"));
    }
  }

  Sourced token = Pick(options.token, "token", "COACH_TOKEN", options, env);
  if (!token.value.empty()) {
    ASSIGN_OR_RETURN(settings.token, CleanToken(token.value, token.source));
  } else {
    Sourced token_file = Pick(options.token_file, "--token-file", "COACH_TOKEN_FILE", options, env);
    if (!token_file.value.empty()) {
      ASSIGN_OR_RETURN(std::string contents, ReadNonEmptyFile(token_file));
      ASSIGN_OR_RETURN(settings.token, CleanToken(contents, token_file.source));
    } else if (options.use_environment && IsLocalAddress(settings.server)) {
      ASSIGN_OR_RETURN(settings.token, LocalOperatorToken(env));
    }
  }

  Sourced ca = Pick(options.tls_ca, "--tls-ca", "COACH_TLS_CA", options, env);
  Sourced cert = Pick(options.tls_cert, "--tls-cert", "COACH_TLS_CERT", options, env);
  Sourced key = Pick(options.tls_key, "--tls-key", "COACH_TLS_KEY", options, env);
  Sourced server_name =
      Pick(options.tls_server_name, "--tls-server-name", "COACH_TLS_SERVER_NAME", options, env);
  if (cert.value.empty() != key.value.empty()) {
    return absl::InvalidArgumentError(
        cert.value.empty()
            ? absl::StrCat(key.source, " needs a client certificate (--tls-cert or COACH_TLS_CERT)")
            : absl::StrCat(cert.source, " needs a client key (--tls-key or COACH_TLS_KEY)"));
  }
  settings.tls = options.use_tls || !ca.value.empty() || !cert.value.empty();
  if (!ca.value.empty()) {
    ASSIGN_OR_RETURN(settings.ca_pem, ReadNonEmptyFile(ca));
  }
  if (!cert.value.empty()) {
    ASSIGN_OR_RETURN(settings.cert_pem, ReadNonEmptyFile(cert));
    ASSIGN_OR_RETURN(settings.key_pem, ReadNonEmptyFile(key));
  }
  if (!server_name.value.empty() && !settings.tls) {
    return absl::InvalidArgumentError(
        absl::StrCat(server_name.source, " needs TLS (--tls-ca or COACH_TLS_CA)"));
  }
  settings.server_name = server_name.value;
  return settings;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const ConnectionSettings& settings) {
  grpc::ChannelArguments args;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (settings.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = settings.ca_pem;
    ssl.pem_cert_chain = settings.cert_pem;
    ssl.pem_private_key = settings.key_pem;
    credentials = grpc::SslCredentials(ssl);
    if (!settings.server_name.empty()) {
      args.SetSslTargetNameOverride(settings.server_name);
    }
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  if (credentials == nullptr) {
    return absl::InvalidArgumentError("gRPC rejected the TLS credentials");
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(settings.server, credentials, args);
  if (channel == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot create a channel to ", settings.server));
  }
  return channel;
}

}  // namespace coach::sdk
