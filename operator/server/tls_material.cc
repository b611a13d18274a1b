#include "operator/server/tls_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "common/openssl/handles.h"

namespace coach::server {
namespace {

using openssl::Bio;
using openssl::Cert;
using openssl::Key;

Bio MemoryBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Cert FirstCertificate(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  if (bio == nullptr) return nullptr;
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

absl::Status CheckTlsMaterial(const std::string& cert_pem, const std::string& key_pem,
                              const std::string& client_ca_pem) {
  // OpenSSL's error queue is per thread; leave it as it was found.
  Cert cert = FirstCertificate(cert_pem);
  if (cert == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("certificate: no PEM certificate in it");
  }
  Bio key_bio = MemoryBio(key_pem);
  Key key(key_bio == nullptr ? nullptr
                             : PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("key: no PEM private key in it (or it is encrypted)");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "key: it is not the private key of the certificate (the first one in its file)");
  }
  if (!client_ca_pem.empty() && FirstCertificate(client_ca_pem) == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("client CA: no PEM certificate in it");
  }
  return absl::OkStatus();
}

}  // namespace coach::server
