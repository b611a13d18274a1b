#include "operator/webhook/certificates.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/buffer.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "common/openssl/handles.h"
#include "common/status_macros.h"

namespace coach::webhook {
namespace {

using openssl::Bignum;
using openssl::Bio;
using openssl::Cert;
using openssl::CertStack;
using openssl::Extension;
using openssl::GeneralName;
using openssl::GeneralNames;
using openssl::Ia5String;
using openssl::Key;
using openssl::Store;
using openssl::StoreCtx;

// RFC 5280's upper bound for commonName (ub-common-name).
constexpr size_t kMaxCommonName = 64;

// OpenSSL's error queue is per thread: drain it on every failure so that a later, unrelated
// call on this thread does not report our leftovers. The strings name library, function and
// reason only, never the data being parsed, so they are safe to put in a Status.
std::string DrainErrors() {
  std::string out;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no OpenSSL error recorded" : out;
}

absl::Status OpensslError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", DrainErrors()));
}

Bio ReadBio(const std::string& pem) {
  if (pem.size() > static_cast<size_t>(INT_MAX)) return nullptr;
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Cert FirstCertificate(const std::string& pem) {
  Bio bio = ReadBio(pem);
  Cert cert(bio == nullptr ? nullptr : PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) ERR_clear_error();
  return cert;
}

// OpenSSL's default password callback prompts on the terminal for an encrypted key; a
// daemon must fail instead.
int NoPassword(char*, int, int, void*) { return -1; }

Key ReadPrivateKey(const std::string& pem) {
  Bio bio = ReadBio(pem);
  Key key(bio == nullptr ? nullptr
                         : PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr));
  if (key == nullptr) ERR_clear_error();
  return key;
}

// Every certificate in `pem`. Other PEM blocks are skipped; a damaged certificate is an error
// rather than the silent end of the list.
absl::StatusOr<std::vector<Cert>> AllCertificates(const std::string& pem) {
  Bio bio = ReadBio(pem);
  if (bio == nullptr) return OpensslError("reading PEM");
  std::vector<Cert> certs;
  while (true) {
    Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    certs.push_back(std::move(cert));
  }
  const unsigned long last = ERR_peek_last_error();
  const bool at_end =
      ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  if (!at_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("PEM certificate number ", certs.size() + 1, " is unreadable"));
  }
  return certs;
}

absl::StatusOr<std::string> BioContents(BIO* bio) {
  BUF_MEM* mem = nullptr;
  BIO_get_mem_ptr(bio, &mem);
  if (mem == nullptr) return OpensslError("reading PEM output");
  return std::string(mem->data, mem->length);
}

absl::StatusOr<std::string> CertificatePem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpensslError("writing certificate PEM");
  }
  return BioContents(bio.get());
}

absl::StatusOr<std::string> PrivateKeyPem(EVP_PKEY* key) {
  // Secure-heap memory is cleansed when freed, so the key's PEM does not linger in the heap.
  Bio bio(BIO_new(BIO_s_secmem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpensslError("writing private key PEM");
  }
  return BioContents(bio.get());
}

absl::StatusOr<absl::Time> ToTime(const ASN1_TIME* t) {
  struct tm tm = {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("certificate: unreadable validity time");
  }
  return absl::FromCivil(absl::CivilSecond(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                                           tm.tm_min, tm.tm_sec),
                         absl::UTCTimeZone());
}

std::string Format(absl::Time t) {
  return absl::FormatTime(absl::RFC3339_sec, t, absl::UTCTimeZone());
}

// The latest time X.509 can express (GeneralizedTime has four year digits).
absl::Time LatestExpressible() {
  return absl::FromCivil(absl::CivilSecond(9999, 12, 31, 23, 59, 59), absl::UTCTimeZone());
}

bool IsCa(X509* cert) { return (X509_get_extension_flags(cert) & EXFLAG_CA) != 0; }

std::vector<std::string> SanDnsNames(X509* cert) {
  std::vector<std::string> out;
  GeneralNames names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (names == nullptr) {
    ERR_clear_error();
    return out;
  }
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_DNS) continue;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
                     static_cast<size_t>(ASN1_STRING_length(name->d.dNSName)));
  }
  return out;
}

bool IsDnsName(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  absl::string_view last;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty() || label.size() > 63) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    last = label;
  }
  // An all-digit last label makes "10.0.0.1" look like a name; an address belongs in an IP SAN.
  for (char c : last) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

absl::Status CheckValidFor(absl::Duration valid_for) {
  if (valid_for <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("valid_for: must be positive, got ", absl::FormatDuration(valid_for)));
  }
  return absl::OkStatus();
}

// What differs between the CA and the serving certificate; everything else is shared.
struct CertificateSpec {
  std::string common_name;         // Empty: no CN in the subject.
  X509* issuer = nullptr;          // nullptr: self-signed.
  EVP_PKEY* issuer_key = nullptr;  // The signer when `issuer` is set.
  absl::Time not_before;
  absl::Time not_after;
  bool is_ca = false;
  std::vector<std::string> dns_names;  // Only for a serving certificate.
};

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Extension ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpensslError(absl::StrCat("adding extension ", OBJ_nid2sn(nid)));
  }
  return absl::OkStatus();
}

absl::Status AddSubjectAltNames(X509* cert, const std::vector<std::string>& dns_names,
                                bool critical) {
  GeneralNames names(sk_GENERAL_NAME_new_null());
  if (names == nullptr) return OpensslError("allocating subjectAltName");
  for (const std::string& dns_name : dns_names) {
    Ia5String value(ASN1_IA5STRING_new());
    GeneralName name(GENERAL_NAME_new());
    if (value == nullptr || name == nullptr ||
        ASN1_STRING_set(value.get(), dns_name.data(), static_cast<int>(dns_name.size())) != 1) {
      return OpensslError("building subjectAltName");
    }
    GENERAL_NAME_set0_value(name.get(), GEN_DNS, value.release());
    if (sk_GENERAL_NAME_push(names.get(), name.get()) == 0) {
      return OpensslError("building subjectAltName");
    }
    name.release();  // Owned by `names` now.
  }
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), critical ? 1 : 0,
                        X509V3_ADD_DEFAULT) != 1) {
    return OpensslError("adding subjectAltName");
  }
  return absl::OkStatus();
}

// EdDSA signs the whole message and takes no separate digest; every other key uses SHA-256.
const EVP_MD* DigestFor(EVP_PKEY* key) {
  if (EVP_PKEY_is_a(key, "ED25519") || EVP_PKEY_is_a(key, "ED448")) return nullptr;
  return EVP_sha256();
}

absl::StatusOr<KeyPair> MakeCertificate(const CertificateSpec& spec) {
  // EVP_PKEY_Q_keygen draws from OpenSSL's DRBG, seeded by the OS.
  Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (key == nullptr) return OpensslError("generating an ECDSA P-256 key");
  Cert cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return OpensslError("allocating a certificate");
  }
  // 128 random bits (the top one fixed so the serial is never zero and always 16 bytes):
  // serials must be unique per issuer, and a new CA reuses the old one's name.
  Bignum serial(BN_new());
  if (serial == nullptr || BN_rand(serial.get(), 128, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return OpensslError("drawing a serial number");
  }
  if (ASN1_TIME_set(X509_getm_notBefore(cert.get()), absl::ToTimeT(spec.not_before)) == nullptr ||
      ASN1_TIME_set(X509_getm_notAfter(cert.get()), absl::ToTimeT(spec.not_after)) == nullptr) {
    return OpensslError("setting the validity");
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (!spec.common_name.empty() &&
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.data()),
                                 static_cast<int>(spec.common_name.size()), -1, 0) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat("common name \"",
                                                   absl::CHexEscape(spec.common_name),
                                                   "\" is not accepted (it must be UTF-8)"));
  }
  X509* issuer = spec.issuer == nullptr ? cert.get() : spec.issuer;
  EVP_PKEY* signer = spec.issuer == nullptr ? key.get() : spec.issuer_key;
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer)) != 1 ||
      X509_set_pubkey(cert.get(), key.get()) != 1) {
    return OpensslError("setting issuer and key");
  }
  // The subject key must be in place before the key identifiers are computed from it.
  if (spec.is_ca) {
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE"));
    RETURN_IF_ERROR(
        AddExtension(cert.get(), issuer, NID_key_usage, "critical,keyCertSign,cRLSign"));
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash"));
  } else {
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE"));
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_key_usage,
                                 "critical,digitalSignature,keyEncipherment"));
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_ext_key_usage, "serverAuth"));
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash"));
    // Lets a verifier pick the right CA out of a bundle whose old and new CA share a name.
    RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid"));
    // RFC 5280 4.2.1.6: with an empty subject the SANs carry the identity and are critical.
    RETURN_IF_ERROR(AddSubjectAltNames(cert.get(), spec.dns_names, spec.common_name.empty()));
  }
  if (X509_sign(cert.get(), signer, DigestFor(signer)) <= 0) {
    return OpensslError("signing the certificate");
  }
  KeyPair pair;
  ASSIGN_OR_RETURN(pair.cert_pem, CertificatePem(cert.get()));
  ASSIGN_OR_RETURN(pair.key_pem, PrivateKeyPem(key.get()));
  return pair;
}

// The verification shared by VerifyServingCertificate and DecideRenewal.
absl::Status VerifyChain(X509* leaf, STACK_OF(X509) * untrusted, const std::vector<X509*>& anchors,
                         const std::string& dns_name, absl::Time now) {
  Store store(X509_STORE_new());
  if (store == nullptr) return OpensslError("allocating a certificate store");
  for (X509* anchor : anchors) {
    if (X509_STORE_add_cert(store.get(), anchor) != 1) {
      return OpensslError("adding a CA certificate to the store");
    }
  }
  StoreCtx ctx(X509_STORE_CTX_new());
  if (ctx == nullptr || X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted) != 1) {
    return OpensslError("preparing verification");
  }
  X509_STORE_CTX_set_time(ctx.get(), 0, absl::ToTimeT(now));
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  // Go, which the API server uses to call the webhook, trusts every caBundle entry as a root.
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
  if (X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER) != 1) {
    return OpensslError("setting the verification purpose");
  }
  if (!dns_name.empty()) {
    X509_VERIFY_PARAM_set_hostflags(
        param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (X509_VERIFY_PARAM_set1_host(param, dns_name.data(), dns_name.size()) != 1) {
      return OpensslError("setting the expected name");
    }
  }
  const int rc = X509_verify_cert(ctx.get());
  if (rc == 1) return absl::OkStatus();
  if (rc < 0) return OpensslError("verifying the certificate");
  const int err = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  switch (err) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
      return absl::FailedPreconditionError(
          absl::StrCat("certificate is not valid for \"", absl::CHexEscape(dns_name),
                       "\"; its DNS names: [", absl::StrJoin(SanDnsNames(leaf), ", "), "]"));
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID: {
      X509* culprit = X509_STORE_CTX_get_current_cert(ctx.get());
      if (culprit == nullptr) break;
      absl::StatusOr<absl::Time> from = ToTime(X509_get0_notBefore(culprit));
      absl::StatusOr<absl::Time> to = ToTime(X509_get0_notAfter(culprit));
      if (from.ok() && to.ok()) {
        // The reason strings read "certificate has expired", "certificate is not yet valid".
        return absl::FailedPreconditionError(absl::StrCat(
            culprit == leaf ? "" : "CA ", X509_verify_cert_error_string(err), ": valid from ",
            Format(*from), " to ", Format(*to), ", now is ", Format(now)));
      }
      break;
    }
    default:
      break;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("certificate does not verify: ", X509_verify_cert_error_string(err)));
}

}  // namespace

absl::StatusOr<KeyPair> MakeCertificateAuthority(const std::string& common_name, absl::Time now,
                                                 absl::Duration valid_for) {
  if (common_name.empty() || common_name.size() > kMaxCommonName) {
    return absl::InvalidArgumentError(absl::StrCat("common_name: must be 1 to ", kMaxCommonName,
                                                   " bytes, got ", common_name.size()));
  }
  RETURN_IF_ERROR(CheckValidFor(valid_for));
  if (now + valid_for > LatestExpressible()) {
    return absl::InvalidArgumentError(
        "valid_for: the CA would expire after 9999-12-31, which X.509 cannot express");
  }
  CertificateSpec spec;
  spec.common_name = common_name;
  spec.not_before = now - kClockSkewAllowance;
  spec.not_after = now + valid_for;
  spec.is_ca = true;
  return MakeCertificate(spec);
}

absl::StatusOr<KeyPair> IssueServingCertificate(const KeyPair& ca,
                                                const std::vector<std::string>& dns_names,
                                                absl::Time now, absl::Duration valid_for) {
  if (dns_names.empty()) {
    return absl::InvalidArgumentError("dns_names: at least one name is needed");
  }
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& name : dns_names) {
    if (!IsDnsName(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dns_names: \"", absl::CHexEscape(name),
          "\" is not a DNS name (dot-separated labels of letters, digits and inner '-', "
          "each 1-63 bytes, at most 253 in all, no wildcard, not an IP address)"));
    }
    if (seen.insert(name).second) names.push_back(name);
  }
  RETURN_IF_ERROR(CheckValidFor(valid_for));
  Cert ca_cert = FirstCertificate(ca.cert_pem);
  if (ca_cert == nullptr) {
    return absl::InvalidArgumentError("CA certificate: no readable PEM certificate in it");
  }
  Key ca_key = ReadPrivateKey(ca.key_pem);
  if (ca_key == nullptr) {
    return absl::InvalidArgumentError(
        "CA key: no readable PEM private key in it (or it is encrypted)");
  }
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("CA key: it is not the private key of the CA certificate");
  }
  if (!IsCa(ca_cert.get())) {
    return absl::InvalidArgumentError(
        "CA certificate: not a CA (its basicConstraints do not say CA:TRUE)");
  }
  ASSIGN_OR_RETURN(absl::Time ca_not_after, ToTime(X509_get0_notAfter(ca_cert.get())));
  if (now >= ca_not_after) {
    return absl::FailedPreconditionError(
        absl::StrCat("CA certificate expired at ", Format(ca_not_after), ", now is ", Format(now)));
  }
  CertificateSpec spec;
  if (names.front().size() <= kMaxCommonName) spec.common_name = names.front();
  spec.issuer = ca_cert.get();
  spec.issuer_key = ca_key.get();
  spec.not_before = now - kClockSkewAllowance;
  // A certificate outliving its CA would only fail verification later, and surprise a reader.
  spec.not_after = std::min(now + valid_for, ca_not_after);
  spec.dns_names = std::move(names);
  return MakeCertificate(spec);
}

absl::StatusOr<CertificateFacts> InspectCertificate(const std::string& cert_pem) {
  Cert cert = FirstCertificate(cert_pem);
  if (cert == nullptr) {
    return absl::InvalidArgumentError("certificate: no readable PEM certificate in it");
  }
  CertificateFacts facts;
  ASSIGN_OR_RETURN(facts.not_before, ToTime(X509_get0_notBefore(cert.get())));
  ASSIGN_OR_RETURN(facts.not_after, ToTime(X509_get0_notAfter(cert.get())));
  facts.dns_names = SanDnsNames(cert.get());
  facts.is_ca = IsCa(cert.get());
  return facts;
}

absl::Status VerifyServingCertificate(const std::string& cert_pem, const std::string& ca_bundle_pem,
                                      const std::string& dns_name, absl::Time now) {
  absl::StatusOr<std::vector<Cert>> chain = AllCertificates(cert_pem);
  if (!chain.ok() || chain->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "certificate: ", chain.ok() ? "no PEM certificate in it" : chain.status().message()));
  }
  absl::StatusOr<std::vector<Cert>> bundle = AllCertificates(ca_bundle_pem);
  if (!bundle.ok() || bundle->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CA bundle: ", bundle.ok() ? "no PEM certificate in it" : bundle.status().message()));
  }
  CertStack untrusted(sk_X509_new_null());
  if (untrusted == nullptr) return OpensslError("allocating the chain");
  for (size_t i = 1; i < chain->size(); ++i) {
    // The stack holds references of its own, dropped when it is freed.
    if (X509_up_ref((*chain)[i].get()) != 1) return OpensslError("building the chain");
    if (sk_X509_push(untrusted.get(), (*chain)[i].get()) == 0) {
      X509_free((*chain)[i].get());
      return OpensslError("building the chain");
    }
  }
  std::vector<X509*> anchors;
  for (const Cert& ca : *bundle) anchors.push_back(ca.get());
  return VerifyChain(chain->front().get(), untrusted.get(), anchors, dns_name, now);
}

absl::Status CheckKeyMatches(const std::string& cert_pem, const std::string& key_pem) {
  Cert cert = FirstCertificate(cert_pem);
  if (cert == nullptr) {
    return absl::InvalidArgumentError("certificate: no readable PEM certificate in it");
  }
  Key key = ReadPrivateKey(key_pem);
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        "key: no readable PEM private key in it (or it is encrypted)");
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("key: it is not the private key of the certificate");
  }
  return absl::OkStatus();
}

Renewal DecideRenewal(const std::string& ca_cert_pem, const std::string& ca_key_pem,
                      const std::string& cert_pem, const std::string& key_pem,
                      const std::vector<std::string>& dns_names, absl::Time now,
                      absl::Duration renew_before, std::string* why) {
  auto decide = [why](Renewal action, std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return action;
  };
  auto recreate = [&decide](std::string reason) {
    return decide(Renewal::kRecreateAll, std::move(reason));
  };
  auto issue = [&decide](std::string reason) {
    return decide(Renewal::kIssueServing, std::move(reason));
  };

  Cert ca = FirstCertificate(ca_cert_pem);
  if (ca == nullptr) return recreate("CA certificate missing or unreadable");
  if (absl::Status s = CheckKeyMatches(ca_cert_pem, ca_key_pem); !s.ok()) {
    return recreate(absl::StrCat("CA ", s.message()));
  }
  if (!IsCa(ca.get())) return recreate("CA certificate is not a CA");
  absl::StatusOr<absl::Time> ca_not_before = ToTime(X509_get0_notBefore(ca.get()));
  absl::StatusOr<absl::Time> ca_not_after = ToTime(X509_get0_notAfter(ca.get()));
  if (!ca_not_before.ok() || !ca_not_after.ok()) return recreate("CA validity unreadable");
  if (now < *ca_not_before) {
    return recreate(absl::StrCat("CA certificate is not valid until ", Format(*ca_not_before),
                                 ", now is ", Format(now)));
  }
  if (now >= *ca_not_after - renew_before) {
    return recreate(absl::StrCat("CA certificate expires at ", Format(*ca_not_after), ", within ",
                                 absl::FormatDuration(renew_before)));
  }

  Cert cert = FirstCertificate(cert_pem);
  if (cert == nullptr) return issue("serving certificate missing or unreadable");
  if (absl::Status s = CheckKeyMatches(cert_pem, key_pem); !s.ok()) {
    return issue(absl::StrCat("serving ", s.message()));
  }
  if (absl::Status s = VerifyChain(cert.get(), nullptr, {ca.get()}, "", now); !s.ok()) {
    return issue(absl::StrCat("serving ", s.message(), " (against the CA)"));
  }
  const std::vector<std::string> has = SanDnsNames(cert.get());
  if (std::set<std::string>(has.begin(), has.end()) !=
      std::set<std::string>(dns_names.begin(), dns_names.end())) {
    return issue(absl::StrCat("serving certificate names [", absl::StrJoin(has, ", "),
                              "] differ from the wanted [", absl::StrJoin(dns_names, ", "), "]"));
  }
  absl::StatusOr<absl::Time> not_after = ToTime(X509_get0_notAfter(cert.get()));
  if (!not_after.ok()) return issue("serving certificate validity unreadable");
  if (now >= *not_after - renew_before) {
    return issue(absl::StrCat("serving certificate expires at ", Format(*not_after), ", within ",
                              absl::FormatDuration(renew_before)));
  }
  return decide(Renewal::kKeep, "");
}

const char* RenewalName(Renewal renewal) {
  switch (renewal) {
    case Renewal::kKeep:
      return "keep";
    case Renewal::kIssueServing:
      return "issue-serving";
    case Renewal::kRecreateAll:
      return "recreate-all";
  }
  return "unknown";
}

}  // namespace coach::webhook
