#include "operator/backend/kube/ssh_auth_keys.h"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace coach::backend::kube {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};

// RFC 4251 "string": a 32-bit big-endian length, then the bytes.
void AppendSshString(std::string& out, const std::string& bytes) {
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out += bytes;
}

}  // namespace

absl::StatusOr<SshKeyPair> NewSshKeyPair() {
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-521"));
  if (key == nullptr) return absl::InternalError("generating an ECDSA P-521 key failed");

  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_PrivateKey_traditional(bio.get(), key.get(), nullptr, nullptr,
                                                             0, nullptr, nullptr) != 1) {
    return absl::InternalError("encoding the SSH private key as PEM failed");
  }
  char* pem = nullptr;
  const long pem_len = BIO_get_mem_data(bio.get(), &pem);
  SshKeyPair pair;
  pair.private_pem.assign(pem, static_cast<size_t>(pem_len));

  // The uncompressed point 0x04 || X || Y: what an OpenSSH ecdsa key blob carries.
  size_t point_len = 0;
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nullptr, 0,
                                      &point_len) != 1) {
    return absl::InternalError("reading the SSH public key failed");
  }
  std::vector<unsigned char> point(point_len);
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point.data(),
                                      point.size(), &point_len) != 1) {
    return absl::InternalError("reading the SSH public key failed");
  }
  constexpr char kKeyType[] = "ecdsa-sha2-nistp521";
  std::string blob;
  AppendSshString(blob, kKeyType);
  AppendSshString(blob, "nistp521");
  AppendSshString(blob, std::string(point.begin(), point.begin() + point_len));
  pair.authorized_key = absl::StrCat(kKeyType, " ", absl::Base64Escape(blob), "\n");
  return pair;
}

absl::Status FillSshAuthSecret(nlohmann::json& secret) {
  if (!secret.is_object() || secret.value("kind", "") != "Secret" ||
      secret.value("type", "") != kSecretTypeSshAuth) {
    return absl::OkStatus();
  }
  if (secret.contains("data") && secret["data"].is_object() && !secret["data"].empty()) {
    return absl::OkStatus();
  }
  absl::StatusOr<SshKeyPair> pair = NewSshKeyPair();
  if (!pair.ok()) return pair.status();
  secret["data"] = {{kSshPrivateKeyField, absl::Base64Escape(pair->private_pem)},
                    {kSshPublicKeyField, absl::Base64Escape(pair->authorized_key)}};
  return absl::OkStatus();
}

}  // namespace coach::backend::kube
