#pragma once

// The certificate a TLS listener presents, replaceable while it serves: a webhook's serving
// certificate is rotated (cert-manager, a Secret updated in place) without a restart, and
// the connections already open keep the certificate they were handshaken with.
//
// Thread-safe: Set may run while any number of handshakes read the current certificate.

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

struct ssl_st;  // OpenSSL's SSL

namespace coach::server {

class ServingCertificate {
 public:
  ServingCertificate();
  ~ServingCertificate();
  ServingCertificate(const ServingCertificate&) = delete;
  ServingCertificate& operator=(const ServingCertificate&) = delete;

  // A holder already Set with the given material. Errors: those of Set.
  static absl::StatusOr<std::shared_ptr<ServingCertificate>> Create(
      const std::string& cert_chain_pem, const std::string& key_pem);

  // Replaces the certificate that every later handshake presents. `cert_chain_pem`: the
  // server's certificate first, then the intermediates a client needs to reach its CA;
  // `key_pem`: the first certificate's private key, unencrypted.
  // Errors: InvalidArgument whose message starts with "certificate" or "key" (nothing
  // parses, or the key is not the certificate's); the previous certificate then stays.
  absl::Status Set(const std::string& cert_chain_pem, const std::string& key_pem);

  // Whether a Set succeeded: until then every handshake fails.
  bool has_certificate() const;

  // For the server, during a handshake: puts the current certificate, its chain and its key
  // on `ssl`. False when none is set or OpenSSL refuses them.
  bool UseFor(ssl_st* ssl) const;

 private:
  struct Material;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Material> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::server
