// The part of Validate for the admission webhooks (--webhook-*): where they listen, and where
// their serving certificate comes from (a directory, or a Secret the operator keeps).

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "operator/cmd/settings.h"
#include "operator/server/http_server.h"

namespace coach::cmd {
namespace {

// A DNS-1123 subdomain: lower-case labels of letters, digits and '-', joined by dots.
bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
  }
  return true;
}

// "NAMESPACE/NAME" into its parts; an error naming the flag.
absl::Status SplitObjectRef(const char* flag, const std::string& value, std::string* ns,
                            std::string* name) {
  const std::vector<std::string> parts = absl::StrSplit(value, '/');
  if (parts.size() != 2 || parts[0].find('.') != std::string::npos || !IsDnsSubdomain(parts[0]) ||
      !IsDnsSubdomain(parts[1])) {
    return UsageError(absl::StrCat(flag, ": want NAMESPACE/NAME, got \"", value, "\""));
  }
  *ns = parts[0];
  *name = parts[1];
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateWebhookFlags(const Flags& flags, bool kube, Settings* settings) {
  const bool any = !flags.webhook_cert_dir.empty() || !flags.webhook_secret.empty() ||
                   !flags.webhook_service.empty() || !flags.webhook_extra_names.empty() ||
                   !flags.webhook_mutating_configuration.empty() ||
                   !flags.webhook_validating_configuration.empty() ||
                   !flags.webhook_client_ca.empty();
  if (flags.webhook_listen.empty()) {
    if (any) return UsageError("--webhook-*: only with --webhook-listen");
    return absl::OkStatus();
  }
  if (!kube) {
    return UsageError(
        "--webhook-listen: only with --backend=kube (the local backend checks the same rules at "
        "submit)");
  }
  std::string host;
  int port = 0;
  if (!coach::server::SplitHostPort(flags.webhook_listen, &host, &port).ok() || port == 0) {
    return UsageError(absl::StrCat("--webhook-listen: want host:port such as 0.0.0.0:9443, got \"",
                                   flags.webhook_listen, "\""));
  }
  Settings::Webhook& webhook = settings->webhook;
  webhook.listen = flags.webhook_listen;
  if (!flags.webhook_client_ca.empty()) {
    RETURN_IF_ERROR(ReadCertificatesFlag("--webhook-client-ca", flags.webhook_client_ca,
                                         &webhook.client_ca_pem));
  }
  if (!flags.webhook_cert_dir.empty()) {
    if (!flags.webhook_secret.empty() || !flags.webhook_service.empty() ||
        !flags.webhook_extra_names.empty() || !flags.webhook_mutating_configuration.empty() ||
        !flags.webhook_validating_configuration.empty()) {
      return UsageError(
          "--webhook-cert-dir: the certificate and the caBundle are someone else's (cert-manager): "
          "--webhook-secret, --webhook-service, --webhook-extra-names and "
          "--webhook-*-configuration are for the operator's own");
    }
    webhook.cert_dir = flags.webhook_cert_dir;
    return absl::OkStatus();
  }
  coach::webhook::CertRotatorOptions& rotator = webhook.rotator;
  if (flags.webhook_secret.empty()) {
    return UsageError("--webhook-listen: needs --webhook-cert-dir or --webhook-secret");
  }
  if (absl::Status s = SplitObjectRef("--webhook-secret", flags.webhook_secret,
                                      &rotator.secret_namespace, &rotator.secret_name);
      !s.ok()) {
    return s;
  }
  if (!flags.webhook_service.empty()) {
    std::string ns, name;
    if (absl::Status s = SplitObjectRef("--webhook-service", flags.webhook_service, &ns, &name);
        !s.ok()) {
      return s;
    }
    rotator.dns_names = coach::webhook::ServiceDnsNames(name, ns, "cluster.local");
  }
  for (absl::string_view part : absl::StrSplit(flags.webhook_extra_names, ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    if (name.empty()) continue;
    if (!IsDnsSubdomain(name)) {
      return UsageError(
          absl::StrCat("--webhook-extra-names: \"", name, "\" is not a DNS name (RFC 1123)"));
    }
    rotator.dns_names.push_back(name);
  }
  if (rotator.dns_names.empty()) {
    return UsageError(
        "--webhook-secret: needs --webhook-service or --webhook-extra-names (the "
        "certificate's names)");
  }
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string&>{"--webhook-mutating-configuration",
                                                   flags.webhook_mutating_configuration},
        std::pair<const char*, const std::string&>{"--webhook-validating-configuration",
                                                   flags.webhook_validating_configuration}}) {
    if (!value.empty() && !IsDnsSubdomain(value)) {
      return UsageError(absl::StrCat(flag, ": \"", value, "\" is not an object name"));
    }
  }
  rotator.mutating_configuration = flags.webhook_mutating_configuration;
  rotator.validating_configuration = flags.webhook_validating_configuration;
  return absl::OkStatus();
}

}  // namespace coach::cmd
