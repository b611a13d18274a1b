#include "operator/server/testing/test_certificates.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "common/openssl/handles.h"

namespace coach::server::testing {
namespace {

using openssl::Bio;
using openssl::Cert;
using openssl::Key;

absl::Status OpenSslError(const char* what) {
  ERR_clear_error();
  return absl::InternalError(std::string("OpenSSL: ") + what);
}

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool added = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return added;
}

// `issuer` and `issuer_key` null: self-signed.
absl::StatusOr<TestCertificate> Make(const std::string& common_name, bool is_ca, X509* issuer,
                                     EVP_PKEY* issuer_key) {
  Key key(EVP_EC_gen("P-256"));
  Cert cert(X509_new());
  if (key == nullptr || cert == nullptr) return OpenSslError("no key or certificate");
  // Random serials: a verifier may cache by (issuer, serial).
  uint64_t serial = 0;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(&serial), sizeof(serial)) != 1) {
    return OpenSslError("RAND_bytes");
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (X509_set_version(cert.get(), 2) != 1 ||
      ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert.get()), serial >> 1) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600) == nullptr ||
      X509_set_pubkey(cert.get(), key.get()) != 1 ||
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(),
                           issuer == nullptr ? subject : X509_get_subject_name(issuer)) != 1) {
    return OpenSslError("certificate fields");
  }
  X509* signer = issuer == nullptr ? cert.get() : issuer;
  const bool extended =
      is_ca ? AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE") &&
                  AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign") &&
                  AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash")
            : AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
                  AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature") &&
                  AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth") &&
                  AddExtension(cert.get(), signer, NID_subject_alt_name,
                               "DNS:localhost,IP:127.0.0.1") &&
                  AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (!extended) return OpenSslError("extensions");
  if (X509_sign(cert.get(), issuer_key == nullptr ? key.get() : issuer_key, EVP_sha256()) == 0) {
    return OpenSslError("X509_sign");
  }
  Bio cert_bio(BIO_new(BIO_s_mem()));
  Bio key_bio(BIO_new(BIO_s_mem()));
  if (cert_bio == nullptr || key_bio == nullptr ||
      PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return OpenSslError("PEM");
  }
  TestCertificate out;
  char* data = nullptr;
  long size = BIO_get_mem_data(cert_bio.get(), &data);  // NOLINT(runtime/int)
  out.cert_pem.assign(data, static_cast<size_t>(size));
  size = BIO_get_mem_data(key_bio.get(), &data);
  out.key_pem.assign(data, static_cast<size_t>(size));
  return out;
}

}  // namespace

absl::StatusOr<TestCertificate> MakeTestCa(const std::string& name) {
  return Make(name, /*is_ca=*/true, nullptr, nullptr);
}

absl::StatusOr<TestCertificate> MakeTestLeaf(const TestCertificate& ca,
                                             const std::string& common_name) {
  Bio cert_bio(BIO_new_mem_buf(ca.cert_pem.data(), static_cast<int>(ca.cert_pem.size())));
  Bio key_bio(BIO_new_mem_buf(ca.key_pem.data(), static_cast<int>(ca.key_pem.size())));
  Cert ca_cert(cert_bio == nullptr ? nullptr
                                   : PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  Key ca_key(key_bio == nullptr
                 ? nullptr
                 : PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (ca_cert == nullptr || ca_key == nullptr) {
    ERR_clear_error();
    return absl::InvalidArgumentError("CA: its certificate or key does not parse");
  }
  return Make(common_name, /*is_ca=*/false, ca_cert.get(), ca_key.get());
}

}  // namespace coach::server::testing
