#include "operator/server/serving_certificate.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <utility>

#include "common/openssl/handles.h"
#include "operator/server/tls_material.h"

namespace coach::server {

// Immutable once built: a handshake holds it by shared_ptr, so a concurrent Set never frees
// what a handshake is installing.
struct ServingCertificate::Material {
  openssl::Cert leaf;
  openssl::CertStack chain;  // the intermediates, without the leaf
  openssl::Key key;
};

ServingCertificate::ServingCertificate() = default;
ServingCertificate::~ServingCertificate() = default;

absl::StatusOr<std::shared_ptr<ServingCertificate>> ServingCertificate::Create(
    const std::string& cert_chain_pem, const std::string& key_pem) {
  auto certificate = std::make_shared<ServingCertificate>();
  if (absl::Status s = certificate->Set(cert_chain_pem, key_pem); !s.ok()) return s;
  return certificate;
}

absl::Status ServingCertificate::Set(const std::string& cert_chain_pem,
                                     const std::string& key_pem) {
  if (absl::Status s = CheckTlsMaterial(cert_chain_pem, key_pem, ""); !s.ok()) return s;
  auto material = std::make_shared<Material>();
  openssl::Bio certs(
      BIO_new_mem_buf(cert_chain_pem.data(), static_cast<int>(cert_chain_pem.size())));
  openssl::Bio key(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
  material->chain.reset(sk_X509_new_null());
  if (certs != nullptr && key != nullptr && material->chain != nullptr) {
    material->leaf.reset(PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr));
    while (X509* next = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr)) {
      if (sk_X509_push(material->chain.get(), next) == 0) X509_free(next);
    }
    material->key.reset(PEM_read_bio_PrivateKey(key.get(), nullptr, nullptr, nullptr));
  }
  // The loop above ends on the PEM reader's "no more certificates"; OpenSSL's error queue is
  // per thread and must not carry that into the caller's next TLS call.
  ERR_clear_error();
  if (material->leaf == nullptr || material->key == nullptr || material->chain == nullptr) {
    return absl::InvalidArgumentError("certificate: OpenSSL could not load it");
  }
  absl::MutexLock lock(&mu_);
  current_ = std::move(material);
  return absl::OkStatus();
}

bool ServingCertificate::has_certificate() const {
  absl::MutexLock lock(&mu_);
  return current_ != nullptr;
}

bool ServingCertificate::UseFor(ssl_st* ssl) const {
  std::shared_ptr<const Material> material;
  {
    absl::MutexLock lock(&mu_);
    material = current_;
  }
  if (material == nullptr) return false;
  return SSL_use_certificate(ssl, material->leaf.get()) == 1 &&
         SSL_use_PrivateKey(ssl, material->key.get()) == 1 &&
         SSL_set1_chain(ssl, material->chain.get()) == 1;
}

}  // namespace coach::server
