#include "operator/backend/kube/client/kube_config.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/v1/codec/yaml_json.h"
#include "common/status_macros.h"

namespace coach::kubeclient {
namespace {

using nlohmann::json;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  absl::Status Error(const std::string& field, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": ", field, ": ", what));
  }

  // A string field; "" when absent. InvalidArgument when present but not a string/scalar.
  absl::StatusOr<std::string> Str(const json& obj, const std::string& key,
                                  const std::string& field) const {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return std::string();
    const json& v = obj[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number() || v.is_boolean()) return v.dump();
    return Error(field, "must be a string");
  }

  absl::StatusOr<std::string> Base64(const json& obj, const std::string& key,
                                     const std::string& field) const {
    ASSIGN_OR_RETURN(std::string text, Str(obj, key, field));
    if (text.empty()) return text;
    std::string compact;
    for (char c : text) {
      if (!absl::ascii_isspace(static_cast<unsigned char>(c))) compact.push_back(c);
    }
    std::string out;
    if (!absl::Base64Unescape(compact, &out) || out.empty()) return Error(field, "invalid base64");
    return out;
  }

  // The entry of `list_key` whose name is `name`, and its index; `what` =
  // "cluster"/"user"/"context".
  absl::StatusOr<std::pair<const json*, std::string>> Named(const json& root,
                                                            const std::string& list_key,
                                                            const std::string& inner_key,
                                                            const std::string& name,
                                                            const std::string& referrer) const {
    if (root.contains(list_key) && !root[list_key].is_null() && !root[list_key].is_array()) {
      return Error(list_key, "must be a list");
    }
    if (root.contains(list_key) && root[list_key].is_array()) {
      const json& list = root[list_key];
      for (size_t i = 0; i < list.size(); ++i) {
        const json& e = list[i];
        std::string field = absl::StrCat(list_key, "[", i, "]");
        if (!e.is_object()) return Error(field, "must be a mapping");
        ASSIGN_OR_RETURN(std::string n, Str(e, "name", field + ".name"));
        if (n != name) continue;
        if (!e.contains(inner_key) || e[inner_key].is_null())
          return std::make_pair(&kEmpty, field + "." + inner_key);
        if (!e[inner_key].is_object()) return Error(field + "." + inner_key, "must be a mapping");
        return std::make_pair(&e[inner_key], field + "." + inner_key);
      }
    }
    return Error(referrer, absl::StrCat("no ", list_key, " entry named \"", name, "\""));
  }

  static const json kEmpty;

 private:
  std::string origin_;
};

const json Parser::kEmpty = json::object();

}  // namespace

absl::StatusOr<KubeConfig> ParseKubeConfig(const std::string& yaml, const std::string& context,
                                           const std::string& base_dir, const std::string& origin) {
  auto doc_or = api::v1::codec::ParseYaml(yaml);
  if (!doc_or.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", doc_or.status().message()));
  }
  const json& root = *doc_or;
  Parser p(origin);
  if (!root.is_object()) return p.Error("(document)", "must be a mapping");

  std::string context_name = context;
  if (context_name.empty()) {
    ASSIGN_OR_RETURN(context_name, p.Str(root, "current-context", "current-context"));
    if (context_name.empty()) return p.Error("current-context", "not set and no context was given");
  }
  std::string ctx_ref = context.empty() ? "current-context" : "context";
  ASSIGN_OR_RETURN(auto ctx, p.Named(root, "contexts", "context", context_name, ctx_ref));
  const json& c = *ctx.first;
  ASSIGN_OR_RETURN(std::string cluster_name, p.Str(c, "cluster", ctx.second + ".cluster"));
  if (cluster_name.empty()) return p.Error(ctx.second + ".cluster", "required");
  ASSIGN_OR_RETURN(std::string user_name, p.Str(c, "user", ctx.second + ".user"));
  ASSIGN_OR_RETURN(std::string ns, p.Str(c, "namespace", ctx.second + ".namespace"));

  KubeConfig cfg;
  cfg.source = absl::StrCat(origin, " context ", context_name);
  if (!ns.empty()) cfg.default_namespace = ns;

  ASSIGN_OR_RETURN(auto cl,
                   p.Named(root, "clusters", "cluster", cluster_name, ctx.second + ".cluster"));
  const json& cluster = *cl.first;
  const std::string& cf = cl.second;
  ASSIGN_OR_RETURN(cfg.server, p.Str(cluster, "server", cf + ".server"));
  if (cfg.server.empty()) return p.Error(cf + ".server", "required");
  if (!absl::StartsWith(cfg.server, "https://") && !absl::StartsWith(cfg.server, "http://")) {
    return p.Error(cf + ".server", absl::StrCat("\"", cfg.server, "\" is not an http(s) URL"));
  }
  while (absl::EndsWith(cfg.server, "/")) cfg.server.pop_back();
  ASSIGN_OR_RETURN(cfg.ca_pem, p.Base64(cluster, "certificate-authority-data",
                                        cf + ".certificate-authority-data"));
  ASSIGN_OR_RETURN(std::string ca_file,
                   p.Str(cluster, "certificate-authority", cf + ".certificate-authority"));
  if (!ca_file.empty() && cfg.ca_pem.empty()) cfg.ca_file = Resolve(base_dir, ca_file);
  if (cluster.contains("insecure-skip-tls-verify") &&
      !cluster["insecure-skip-tls-verify"].is_null()) {
    const json& v = cluster["insecure-skip-tls-verify"];
    if (!v.is_boolean()) return p.Error(cf + ".insecure-skip-tls-verify", "must be true or false");
    cfg.insecure_skip_tls_verify = v.get<bool>();
  }
  if (cfg.insecure_skip_tls_verify && (!cfg.ca_pem.empty() || !cfg.ca_file.empty())) {
    return p.Error(cf + ".insecure-skip-tls-verify",
                   "cannot be combined with certificate-authority(-data)");
  }
  ASSIGN_OR_RETURN(cfg.tls_server_name, p.Str(cluster, "tls-server-name", cf + ".tls-server-name"));

  if (!user_name.empty()) {
    ASSIGN_OR_RETURN(auto us, p.Named(root, "users", "user", user_name, ctx.second + ".user"));
    const json& user = *us.first;
    const std::string& uf = us.second;
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (user.contains(unsupported) && !user[unsupported].is_null()) {
        return p.Error(uf + "." + unsupported,
                       "not supported (use a client certificate or a token)");
      }
    }
    ASSIGN_OR_RETURN(cfg.client_cert_pem,
                     p.Base64(user, "client-certificate-data", uf + ".client-certificate-data"));
    ASSIGN_OR_RETURN(cfg.client_key_pem,
                     p.Base64(user, "client-key-data", uf + ".client-key-data"));
    ASSIGN_OR_RETURN(std::string cert_file,
                     p.Str(user, "client-certificate", uf + ".client-certificate"));
    ASSIGN_OR_RETURN(std::string key_file, p.Str(user, "client-key", uf + ".client-key"));
    if (cfg.client_cert_pem.empty()) cfg.client_cert_file = Resolve(base_dir, cert_file);
    if (cfg.client_key_pem.empty()) cfg.client_key_file = Resolve(base_dir, key_file);
    bool has_cert = !cfg.client_cert_pem.empty() || !cfg.client_cert_file.empty();
    bool has_key = !cfg.client_key_pem.empty() || !cfg.client_key_file.empty();
    if (has_cert != has_key) {
      return p.Error(
          uf + (has_cert ? ".client-key" : ".client-certificate"),
          "required together with " + std::string(has_cert ? "client-certificate" : "client-key"));
    }
    ASSIGN_OR_RETURN(cfg.token, p.Str(user, "token", uf + ".token"));
    ASSIGN_OR_RETURN(std::string token_file, p.Str(user, "tokenFile", uf + ".tokenFile"));
    if (cfg.token.empty()) cfg.token_file = Resolve(base_dir, token_file);
  }
  return cfg;
}

absl::StatusOr<KubeConfig> LoadKubeConfigFile(const std::string& path, const std::string& context) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string dir;
  auto slash = path.rfind('/');
  if (slash != std::string::npos) dir = path.substr(0, slash == 0 ? 1 : slash);
  return ParseKubeConfig(text, context, dir, "kubeconfig " + path);
}

absl::StatusOr<KubeConfig> InClusterConfig(const InClusterOptions& options) {
  std::string host = options.host;
  std::string port = options.port;
  if (host.empty()) {
    const char* h = std::getenv("KUBERNETES_SERVICE_HOST");
    host = h != nullptr ? h : "";
  }
  if (port.empty()) {
    const char* p = std::getenv("KUBERNETES_SERVICE_PORT");
    port = p != nullptr ? p : "";
  }
  if (host.empty() || port.empty()) {
    return absl::NotFoundError(
        "not in a cluster: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset");
  }
  const std::string& dir = options.service_account_dir;
  KubeConfig cfg;
  cfg.source = "in-cluster";
  cfg.server = absl::StrCat(
      "https://", host.find(':') != std::string::npos ? "[" + host + "]" : host, ":", port);
  cfg.token_file = dir + "/token";
  struct stat st;
  if (::stat(cfg.token_file.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("in-cluster: no service-account token at ", cfg.token_file));
  }
  if (::stat((dir + "/ca.crt").c_str(), &st) == 0) cfg.ca_file = dir + "/ca.crt";
  auto ns = ReadFile(dir + "/namespace");
  if (ns.ok()) {
    std::string n(absl::StripAsciiWhitespace(*ns));
    if (!n.empty()) cfg.default_namespace = n;
  }
  return cfg;
}

absl::StatusOr<KubeConfig> LoadDefaultConfig(const std::string& kubeconfig_path,
                                             const std::string& context) {
  if (!kubeconfig_path.empty()) return LoadKubeConfigFile(kubeconfig_path, context);
  const char* env = std::getenv("KUBECONFIG");
  if (env != nullptr && *env != '\0') {
    for (absl::string_view part : absl::StrSplit(env, ':', absl::SkipEmpty())) {
      return LoadKubeConfigFile(std::string(part), context);
    }
  }
  auto in_cluster = InClusterConfig();
  if (in_cluster.ok() || !absl::IsNotFound(in_cluster.status())) return in_cluster;
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    std::string path = std::string(home) + "/.kube/config";
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return LoadKubeConfigFile(path, context);
  }
  return absl::NotFoundError("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a cluster");
}

TokenSource::TokenSource(const KubeConfig& config, absl::Duration recheck, Clock* clock)
    : literal_(config.token), file_(config.token_file), recheck_(recheck), clock_(clock) {}

absl::StatusOr<std::string> TokenSource::Token() {
  if (!literal_.empty() || file_.empty()) return literal_;
  absl::MutexLock lock(&mu_);
  absl::Time now = clock_->Now();
  if (!cached_.empty() && now - checked_ < recheck_) return cached_;
  checked_ = now;
  struct stat st;
  if (::stat(file_.c_str(), &st) != 0) {
    if (!cached_.empty()) return cached_;
    return absl::UnavailableError(absl::StrCat("cannot stat token file ", file_));
  }
  if (!cached_.empty() && st.st_mtim.tv_sec == mtime_.tv_sec &&
      st.st_mtim.tv_nsec == mtime_.tv_nsec && static_cast<long long>(st.st_size) == size_) {
    return cached_;
  }
  auto text = ReadFile(file_);
  if (!text.ok()) {
    if (!cached_.empty()) return cached_;
    return absl::UnavailableError(absl::StrCat("cannot read token file ", file_));
  }
  std::string token(absl::StripAsciiWhitespace(*text));
  if (token.empty()) {
    if (!cached_.empty()) return cached_;
    return absl::UnavailableError(absl::StrCat("token file ", file_, " is empty"));
  }
  cached_ = std::move(token);
  mtime_ = st.st_mtim;
  size_ = static_cast<long long>(st.st_size);
  return cached_;
}

void TokenSource::Invalidate() {
  absl::MutexLock lock(&mu_);
  size_ = -1;
  checked_ = absl::InfinitePast();
}

}  // namespace coach::kubeclient
