#pragma once

// The admission webhook's serving certificate without a manual step, as upstream's cert
// rotator (open-policy-agent/cert-controller) keeps it: a CA and a serving certificate for the
// webhook Service's names live in one Secret that every operator replica reads, so that each
// serves admission with the same certificate; whichever replica finds the Secret empty, its
// certificate near expiry or not covering the names renews it (conditionally on the Secret's
// resourceVersion: two replicas never both win); each replica writes the Secret's CA into the
// caBundle of every webhook of the named configurations where it differs.
//
// The Secret: kubernetes.io/tls with tls.crt, tls.key (the serving pair), ca.crt (the CA that
// signs it first, then the CA it replaced while that is still valid, so that a replica still
// serving the old certificate is trusted during the change) and ca.key.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::webhook {

struct CertRotatorOptions {
  std::string secret_namespace;
  std::string secret_name;
  // The serving certificate's DNS names (the Service's: name, name.ns, name.ns.svc, ...).
  std::vector<std::string> dns_names;
  // The webhook configurations whose caBundle follows the Secret's CA ("" : none).
  std::string mutating_configuration;
  std::string validating_configuration;
  absl::Duration ca_validity = absl::Hours(24 * 365 * 10);
  absl::Duration serving_validity = absl::Hours(24 * 365);
  // Renewed this long before either expires.
  absl::Duration renew_before = absl::Hours(24 * 90);
  Clock* clock = Clock::Real();
};

// The serving pair and the CA bundle a pass found or made.
struct ServingMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string ca_bundle_pem;
  // Whether the configurations' caBundle could be written: the certificate is served either
  // way (the API server trusts it once the caBundle is written, by this pass or a later one).
  absl::Status ca_bundle;
};

class CertRotator {
 public:
  // `client` must outlive the rotator.
  CertRotator(kubeclient::KubeClient* client, CertRotatorOptions options);

  // One pass: reads the Secret, creates or renews what needs it, writes the caBundle of the
  // configurations (its failure in the result's ca_bundle), and returns the material to serve.
  // Errors: the client's on the Secret (Unavailable, PermissionDenied naming the object),
  // Aborted when another replica changed the Secret meanwhile (the next pass reads the
  // winner's), InvalidArgument (options: no names, no Secret).
  absl::StatusOr<ServingMaterial> Sync();

 private:
  absl::StatusOr<ServingMaterial> EnsureSecret();
  absl::Status EnsureCaBundle(const std::string& kind_plural, const std::string& kind,
                              const std::string& name, const std::string& ca_bundle_pem);

  kubeclient::KubeClient* const client_;
  const CertRotatorOptions options_;
};

// The names a Service `name` in `ns` answers to inside the cluster, `cluster_domain` last
// ("" : without it).
std::vector<std::string> ServiceDnsNames(const std::string& name, const std::string& ns,
                                         const std::string& cluster_domain);

}  // namespace coach::webhook
