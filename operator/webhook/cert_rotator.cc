#include "operator/webhook/cert_rotator.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/backend/kube/client/resource.h"
#include "operator/webhook/certificates.h"

namespace coach::webhook {
namespace {

using nlohmann::json;

constexpr char kCaCert[] = "ca.crt";
constexpr char kCaKey[] = "ca.key";
constexpr char kTlsCert[] = "tls.crt";
constexpr char kTlsKey[] = "tls.key";

kubeclient::ResourceDescriptor WebhookConfigurations(const std::string& plural,
                                                     const std::string& kind) {
  return {"admissionregistration.k8s.io", "v1", plural, kind, false, false};
}

std::string DataField(const json& secret, const char* key) {
  auto data = secret.find("data");
  if (data == secret.end() || !data->is_object()) return "";
  auto value = data->find(key);
  if (value == data->end() || !value->is_string()) return "";
  std::string decoded;
  return absl::Base64Unescape(value->get<std::string>(), &decoded) ? decoded : "";
}

json SecretData(const ServingMaterial& material, const std::string& ca_key_pem) {
  return {{kCaCert, absl::Base64Escape(material.ca_bundle_pem)},
          {kCaKey, absl::Base64Escape(ca_key_pem)},
          {kTlsCert, absl::Base64Escape(material.cert_pem)},
          {kTlsKey, absl::Base64Escape(material.key_pem)}};
}

// `status` with `where` (the object) before its message.
absl::Status About(const std::string& where, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
}

// The first PEM certificate of a bundle.
std::string FirstCertificate(const std::string& bundle) {
  constexpr char kEnd[] = "-----END CERTIFICATE-----";
  const size_t end = bundle.find(kEnd);
  if (end == std::string::npos) return bundle;
  return bundle.substr(0, end + sizeof(kEnd) - 1) + "\n";
}

}  // namespace

std::vector<std::string> ServiceDnsNames(const std::string& name, const std::string& ns,
                                         const std::string& cluster_domain) {
  std::vector<std::string> names = {name, absl::StrCat(name, ".", ns),
                                    absl::StrCat(name, ".", ns, ".svc")};
  if (!cluster_domain.empty())
    names.push_back(absl::StrCat(name, ".", ns, ".svc.", cluster_domain));
  return names;
}

CertRotator::CertRotator(kubeclient::KubeClient* client, CertRotatorOptions options)
    : client_(client), options_(std::move(options)) {}

absl::StatusOr<ServingMaterial> CertRotator::Sync() {
  if (options_.dns_names.empty() || options_.secret_name.empty() ||
      options_.secret_namespace.empty()) {
    return absl::InvalidArgumentError("webhook certificate: no Secret or no DNS names");
  }
  ASSIGN_OR_RETURN(ServingMaterial material, EnsureSecret());
  if (!options_.mutating_configuration.empty()) {
    material.ca_bundle.Update(
        EnsureCaBundle("mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
                       options_.mutating_configuration, material.ca_bundle_pem));
  }
  if (!options_.validating_configuration.empty()) {
    material.ca_bundle.Update(
        EnsureCaBundle("validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
                       options_.validating_configuration, material.ca_bundle_pem));
  }
  return material;
}

absl::StatusOr<ServingMaterial> CertRotator::EnsureSecret() {
  const kubeclient::ResourceDescriptor secrets = kubeclient::resources::Secrets();
  const std::string where =
      absl::StrCat("Secret ", options_.secret_namespace, "/", options_.secret_name);
  absl::StatusOr<json> secret =
      client_->Get(secrets, options_.secret_namespace, options_.secret_name);
  if (!secret.ok() && !absl::IsNotFound(secret.status())) return About(where, secret.status());
  const bool exists = secret.ok();
  const json current = exists ? *secret : json::object();
  ServingMaterial material;
  material.cert_pem = DataField(current, kTlsCert);
  material.key_pem = DataField(current, kTlsKey);
  material.ca_bundle_pem = DataField(current, kCaCert);
  std::string ca_key = DataField(current, kCaKey);
  const absl::Time now = options_.clock->Now();

  const Renewal renewal =
      DecideRenewal(FirstCertificate(material.ca_bundle_pem), ca_key, material.cert_pem,
                    material.key_pem, options_.dns_names, now, options_.renew_before);
  if (renewal == Renewal::kKeep) return material;
  if (renewal == Renewal::kRecreateAll) {
    const std::string previous_ca = FirstCertificate(material.ca_bundle_pem);
    ASSIGN_OR_RETURN(KeyPair ca, MakeCertificateAuthority("coach-operator-webhook-ca", now,
                                                          options_.ca_validity));
    material.ca_bundle_pem = ca.cert_pem;
    // The CA being replaced stays trusted while it is valid: a replica that has not read the
    // new Secret yet still serves a certificate it signed.
    absl::StatusOr<CertificateFacts> old_facts = InspectCertificate(previous_ca);
    if (old_facts.ok() && old_facts->is_ca && old_facts->not_after > now) {
      material.ca_bundle_pem += previous_ca;
    }
    ca_key = ca.key_pem;
  }
  ASSIGN_OR_RETURN(KeyPair serving, IssueServingCertificate(
                                        KeyPair{FirstCertificate(material.ca_bundle_pem), ca_key},
                                        options_.dns_names, now, options_.serving_validity));
  material.cert_pem = serving.cert_pem;
  material.key_pem = serving.key_pem;

  json desired = {{"apiVersion", "v1"},
                  {"kind", "Secret"},
                  {"type", "kubernetes.io/tls"},
                  {"metadata",
                   {{"name", options_.secret_name},
                    {"namespace", options_.secret_namespace},
                    {"labels", {{"app.kubernetes.io/managed-by", "coach-operator"}}}}},
                  {"data", SecretData(material, ca_key)}};
  absl::StatusOr<json> written;
  if (exists) {
    // Conditional on what was read: of two replicas renewing at once, one wins and the
    // other's next pass serves the winner's.
    json updated = current;
    updated["data"] = desired["data"];
    updated["type"] = current.value("type", "kubernetes.io/tls");
    written = client_->Update(secrets, options_.secret_namespace, updated);
  } else {
    written = client_->Create(secrets, options_.secret_namespace, desired);
  }
  if (absl::IsAborted(written.status()) || absl::IsAlreadyExists(written.status())) {
    return absl::AbortedError(absl::StrCat(where, ": changed by another replica; read next pass"));
  }
  if (!written.ok()) return About(where, written.status());
  return material;
}

absl::Status CertRotator::EnsureCaBundle(const std::string& kind_plural, const std::string& kind,
                                         const std::string& name,
                                         const std::string& ca_bundle_pem) {
  const kubeclient::ResourceDescriptor resource = WebhookConfigurations(kind_plural, kind);
  const std::string where = absl::StrCat(kind, " ", name);
  absl::StatusOr<json> config = client_->Get(resource, "", name);
  if (!config.ok()) return About(where, config.status());
  const std::string bundle = absl::Base64Escape(ca_bundle_pem);
  json ops = json::array();
  const json webhooks = config->value("webhooks", json::array());
  for (size_t i = 0; i < webhooks.size(); ++i) {
    const json client_config = webhooks[i].value("clientConfig", json::object());
    if (client_config.value("caBundle", "") == bundle) continue;
    json op = json::object();
    op["op"] = "add";
    op["path"] = absl::StrCat("/webhooks/", i, "/clientConfig/caBundle");
    op["value"] = bundle;
    ops.push_back(std::move(op));
  }
  if (ops.empty()) return absl::OkStatus();
  // Conditional: the webhooks' order may have changed since the read (a chart upgrade).
  json test = json::object();
  test["op"] = "test";
  test["path"] = "/metadata/resourceVersion";
  test["value"] = config->value("metadata", json::object()).value("resourceVersion", "");
  ops.insert(ops.begin(), std::move(test));
  absl::StatusOr<json> patched =
      client_->Patch(resource, "", name, kubeclient::PatchType::kJson, ops);
  if (!patched.ok()) return About(where + ": caBundle", patched.status());
  return absl::OkStatus();
}

}  // namespace coach::webhook
