#pragma once

// The admission webhook's serving certificates, made and checked in-process, as upstream's
// cert-controller rotator does: a self-signed CA and a serving certificate for the webhook
// Service's DNS names signed by it, both kept in a Secret and renewed before they expire.
//
// Pure apart from OpenSSL's CSPRNG (keys, serial numbers): time is always an argument, nothing
// is read from or written to disk, nothing is logged. Private keys never appear in an error
// message. Safe to call from several threads at once.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace coach::webhook {

// PEM text: `cert_pem` one "CERTIFICATE" block, `key_pem` its key as unencrypted PKCS#8
// ("PRIVATE KEY"), the shape of a kubernetes.io/tls Secret's tls.crt and tls.key.
struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

// How far back notBefore is set from `now`, so that a peer whose clock is a little behind
// accepts a certificate made a moment ago.
inline constexpr absl::Duration kClockSkewAllowance = absl::Hours(1);

// A self-signed CA: a fresh ECDSA P-256 key, subject CN = `common_name`, a random 128-bit
// serial, basicConstraints CA:TRUE (critical), keyUsage keyCertSign|cRLSign (critical), a
// subjectKeyIdentifier; valid from now - kClockSkewAllowance to now + `valid_for`.
// Errors: InvalidArgument (`common_name` empty or over 64 bytes, the X.509 limit; `valid_for`
// not positive or reaching past the year 9999), Internal (OpenSSL failed).
absl::StatusOr<KeyPair> MakeCertificateAuthority(const std::string& common_name, absl::Time now,
                                                 absl::Duration valid_for);

// A serving certificate signed by `ca` (the first certificate in `ca.cert_pem`, and
// `ca.key_pem`): a fresh ECDSA P-256 key, a random 128-bit serial, basicConstraints CA:FALSE
// (critical), keyUsage digitalSignature|keyEncipherment (critical), extKeyUsage serverAuth,
// subjectAltName DNS = `dns_names` (in order, duplicates dropped), subject CN = the first name
// (no CN when it is over 64 bytes: clients match the SANs only), authorityKeyIdentifier = the
// CA's key, so a bundle holding an old and a new CA of the same name picks the right one.
// Valid from now - kClockSkewAllowance to min(now + `valid_for`, the CA's notAfter).
// A DNS name here is what a Service's names are: dot-separated labels of letters, digits and
// '-' (not first or last), 1-63 bytes each, 253 in all, no trailing dot, no wildcard, and a
// last label that is not all digits (so no IPv4 address).
// Errors: InvalidArgument (no names; a name that is not a DNS name, quoted in the message;
// `valid_for` not positive; the CA certificate or key missing or unreadable, the key not the
// certificate's, or the certificate not a CA), FailedPrecondition (the CA has expired at
// `now`), Internal (OpenSSL failed).
absl::StatusOr<KeyPair> IssueServingCertificate(const KeyPair& ca,
                                                const std::vector<std::string>& dns_names,
                                                absl::Time now, absl::Duration valid_for);

// Facts read from the first certificate in a PEM text.
struct CertificateFacts {
  absl::Time not_before;
  absl::Time not_after;
  // The subjectAltName DNS entries, in the certificate's order (empty when it has none).
  std::vector<std::string> dns_names;
  // basicConstraints says CA:TRUE.
  bool is_ca = false;
};

// Errors: InvalidArgument (no readable PEM certificate in `cert_pem`).
absl::StatusOr<CertificateFacts> InspectCertificate(const std::string& cert_pem);

// Whether the first certificate in `cert_pem` (any after it are taken as untrusted
// intermediates) chains to one of the certificates in `ca_bundle_pem` (several PEM
// certificates concatenated, as in a webhook configuration's caBundle; each one is a trust
// anchor, self-signed or not, as the API server's Go client treats a caBundle) at `now`, is fit for
// TLS server authentication (extKeyUsage serverAuth when present) and, when `dns_name` is not
// empty, has it among its SAN DNS names (the subject CN is never consulted, as in Go).
// Errors: FailedPrecondition (it does not verify; the message says why: expired, not yet
// valid, unknown issuer, wrong name, ...), InvalidArgument (no readable certificate in
// `cert_pem`, or none in `ca_bundle_pem`, or a bundle entry that is unreadable).
absl::Status VerifyServingCertificate(const std::string& cert_pem, const std::string& ca_bundle_pem,
                                      const std::string& dns_name, absl::Time now);

// Whether `key_pem` (an unencrypted private key, PKCS#8 or traditional) is the key of the
// first certificate in `cert_pem`.
// Errors: InvalidArgument (no readable certificate, no readable unencrypted key, or a key that
// is not the certificate's; the message never contains the key).
absl::Status CheckKeyMatches(const std::string& cert_pem, const std::string& key_pem);

// What the rotator does with the material it found in the Secret.
enum class Renewal {
  kKeep,          // Everything is fine.
  kIssueServing,  // Keep the CA; issue a new serving certificate from it.
  kRecreateAll,   // Make a new CA and a serving certificate from it.
};

// The rotator's rule (upstream's "lookahead"): a certificate is renewed once `now` is within
// `renew_before` of its notAfter. The rules, in order:
//   kRecreateAll when the CA certificate (the first in `ca_cert_pem`) or its key is missing or
//   unreadable, the key is not the certificate's, the certificate is not a CA, it is not yet
//   valid at `now`, or now >= its notAfter - renew_before;
//   kIssueServing when the serving certificate (first in `cert_pem`) or its key is missing or
//   unreadable, the key is not the certificate's, the certificate does not verify against that
//   CA alone at `now` (see VerifyServingCertificate), its set of SAN DNS names differs from
//   `dns_names` (as sets: a name added or removed both count), or now >= its notAfter -
//   renew_before;
//   kKeep otherwise.
// An empty string stands for a missing Secret key. Choose `renew_before` well below the
// validity given to MakeCertificateAuthority and IssueServingCertificate, or every decision
// renews again. `why` (may be null) receives the reason, for a log line or an Event: empty for
// kKeep, never any key material.
Renewal DecideRenewal(const std::string& ca_cert_pem, const std::string& ca_key_pem,
                      const std::string& cert_pem, const std::string& key_pem,
                      const std::vector<std::string>& dns_names, absl::Time now,
                      absl::Duration renew_before, std::string* why = nullptr);

// "keep", "issue-serving", "recreate-all".
const char* RenewalName(Renewal renewal);

}  // namespace coach::webhook
