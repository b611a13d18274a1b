#include "operator/webhook/certificates.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/openssl/handles.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace coach::webhook {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const absl::Time kT0 = absl::FromCivil(absl::CivilSecond(2030, 1, 1, 0, 0, 0), absl::UTCTimeZone());
const absl::Duration kDay = absl::Hours(24);
const absl::Duration kCaLife = 3650 * kDay;
const absl::Duration kServingLife = 365 * kDay;
const std::vector<std::string> kNames = {"svc", "svc.ns", "svc.ns.svc"};

KeyPair MustMakeCa(absl::Time now = kT0, absl::Duration valid_for = kCaLife) {
  absl::StatusOr<KeyPair> ca = MakeCertificateAuthority("coach-webhook-ca", now, valid_for);
  EXPECT_TRUE(ca.ok()) << ca.status();
  return ca.ok() ? *ca : KeyPair{};
}

KeyPair MustIssue(const KeyPair& ca, const std::vector<std::string>& names = kNames,
                  absl::Time now = kT0, absl::Duration valid_for = kServingLife) {
  absl::StatusOr<KeyPair> cert = IssueServingCertificate(ca, names, now, valid_for);
  EXPECT_TRUE(cert.ok()) << cert.status();
  return cert.ok() ? *cert : KeyPair{};
}

CertificateFacts MustInspect(const std::string& pem) {
  absl::StatusOr<CertificateFacts> facts = InspectCertificate(pem);
  EXPECT_TRUE(facts.ok()) << facts.status();
  return facts.ok() ? *facts : CertificateFacts{};
}

// Plain OpenSSL, independent of the library's own verification code.
using openssl::Bignum;
using openssl::Bio;
using openssl::Cert;
using openssl::Store;
using openssl::StoreCtx;

Cert ParseCert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

// X509_verify_cert's error code (X509_V_OK on success) for `leaf` against the single root `ca`.
int OpensslVerify(const std::string& leaf_pem, const std::string& ca_pem, const std::string& host,
                  absl::Time at) {
  Cert leaf = ParseCert(leaf_pem);
  Cert ca = ParseCert(ca_pem);
  if (leaf == nullptr || ca == nullptr) return -1;
  Store store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca.get());
  StoreCtx ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf.get(), nullptr);
  X509_STORE_CTX_set_time(ctx.get(), 0, absl::ToTimeT(at));
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx.get()), host.c_str(), 0);
  if (X509_verify_cert(ctx.get()) == 1) return X509_V_OK;
  return X509_STORE_CTX_get_error(ctx.get());
}

TEST(CertificatesTest, ServingCertificateVerifiesForEachName) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  const absl::Time now = kT0 + kDay;
  for (const std::string& name : kNames) {
    EXPECT_TRUE(VerifyServingCertificate(serving.cert_pem, ca.cert_pem, name, now).ok()) << name;
    EXPECT_EQ(OpensslVerify(serving.cert_pem, ca.cert_pem, name, now), X509_V_OK) << name;
  }
  EXPECT_TRUE(VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "", now).ok());
  EXPECT_TRUE(CheckKeyMatches(serving.cert_pem, serving.key_pem).ok());
  EXPECT_TRUE(CheckKeyMatches(ca.cert_pem, ca.key_pem).ok());
}

TEST(CertificatesTest, InspectReadsBackNamesValidityAndRole) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);

  CertificateFacts ca_facts = MustInspect(ca.cert_pem);
  EXPECT_TRUE(ca_facts.is_ca);
  EXPECT_THAT(ca_facts.dns_names, IsEmpty());
  EXPECT_EQ(ca_facts.not_before, kT0 - kClockSkewAllowance);
  EXPECT_EQ(ca_facts.not_after, kT0 + kCaLife);

  CertificateFacts facts = MustInspect(serving.cert_pem);
  EXPECT_FALSE(facts.is_ca);
  EXPECT_THAT(facts.dns_names, ElementsAre("svc", "svc.ns", "svc.ns.svc"));
  EXPECT_EQ(facts.not_before, kT0 - kClockSkewAllowance);
  EXPECT_EQ(facts.not_after, kT0 + kServingLife);
}

TEST(CertificatesTest, ExtensionsKeysAndSerialsAreAsDocumented) {
  KeyPair ca = MustMakeCa();
  KeyPair other_ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  Cert ca_cert = ParseCert(ca.cert_pem);
  Cert other_cert = ParseCert(other_ca.cert_pem);
  Cert leaf = ParseCert(serving.cert_pem);
  ASSERT_NE(ca_cert, nullptr);
  ASSERT_NE(other_cert, nullptr);
  ASSERT_NE(leaf, nullptr);

  EXPECT_EQ(X509_get_key_usage(ca_cert.get()),
            static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  EXPECT_EQ(X509_get_key_usage(leaf.get()),
            static_cast<uint32_t>(KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT));
  EXPECT_EQ(X509_get_extended_key_usage(leaf.get()), static_cast<uint32_t>(XKU_SSL_SERVER));
  EXPECT_EQ(X509_check_issued(ca_cert.get(), leaf.get()), X509_V_OK);
  ASSERT_NE(X509_get0_authority_key_id(leaf.get()), nullptr);
  EXPECT_EQ(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf.get()),
                                  X509_get0_subject_key_id(ca_cert.get())),
            0);

  for (X509* cert : {ca_cert.get(), leaf.get()}) {
    EVP_PKEY* key = X509_get0_pubkey(cert);
    ASSERT_NE(key, nullptr);
    EXPECT_TRUE(EVP_PKEY_is_a(key, "EC"));
    EXPECT_EQ(EVP_PKEY_get_bits(key), 256);
    Bignum serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
    EXPECT_EQ(BN_num_bits(serial.get()), 128);
  }
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca_cert.get()),
                             X509_get0_serialNumber(other_cert.get())),
            0);
  EXPECT_THAT(serving.key_pem, HasSubstr("-----BEGIN PRIVATE KEY-----"));
}

TEST(CertificatesTest, ServingCertificateDoesNotOutliveItsCa) {
  KeyPair ca = MustMakeCa(kT0, 30 * kDay);
  KeyPair serving = MustIssue(ca, kNames, kT0 + kDay, kServingLife);
  EXPECT_EQ(MustInspect(serving.cert_pem).not_after, MustInspect(ca.cert_pem).not_after);
}

TEST(CertificatesTest, DuplicateNamesAreDropped) {
  KeyPair serving = MustIssue(MustMakeCa(), {"svc.ns.svc", "svc", "svc.ns.svc"});
  EXPECT_THAT(MustInspect(serving.cert_pem).dns_names, ElementsAre("svc.ns.svc", "svc"));
}

TEST(CertificatesTest, CertificateFromAnotherCaFails) {
  KeyPair ca = MustMakeCa();
  KeyPair stranger = MustMakeCa();
  KeyPair serving = MustIssue(stranger);
  absl::Status s = VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "svc", kT0 + kDay);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(OpensslVerify(serving.cert_pem, ca.cert_pem, "svc", kT0 + kDay), X509_V_OK);
}

TEST(CertificatesTest, WrongNameFails) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  absl::Status s =
      VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "other.ns.svc", kT0 + kDay);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"other.ns.svc\""));
  // A prefix of a real name is not that name.
  EXPECT_FALSE(VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "svc.n", kT0 + kDay).ok());
}

TEST(CertificatesTest, BundleWithOldAndNewCaVerifiesBoth) {
  // A rotation: both CAs share a name, as the rotator makes them; the old one stays in the
  // caBundle until every serving certificate comes from the new one.
  KeyPair old_ca = MustMakeCa(kT0 - 300 * kDay, 400 * kDay);
  KeyPair new_ca = MustMakeCa();
  KeyPair old_serving = MustIssue(old_ca, kNames, kT0 - 300 * kDay, kServingLife);
  KeyPair new_serving = MustIssue(new_ca);
  const absl::Time now = kT0 + kDay;
  for (const std::string& bundle :
       {old_ca.cert_pem + new_ca.cert_pem, new_ca.cert_pem + old_ca.cert_pem}) {
    EXPECT_TRUE(VerifyServingCertificate(old_serving.cert_pem, bundle, "svc.ns.svc", now).ok());
    EXPECT_TRUE(VerifyServingCertificate(new_serving.cert_pem, bundle, "svc.ns.svc", now).ok());
  }
  EXPECT_FALSE(
      VerifyServingCertificate(old_serving.cert_pem, new_ca.cert_pem, "svc.ns.svc", now).ok());
}

TEST(CertificatesTest, ExpiredOrNotYetValidFails) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  absl::Status expired = VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "svc",
                                                  kT0 + kServingLife + absl::Seconds(1));
  EXPECT_EQ(expired.code(), absl::StatusCode::kFailedPrecondition) << expired;
  EXPECT_THAT(expired.message(), HasSubstr("expired"));
  EXPECT_EQ(OpensslVerify(serving.cert_pem, ca.cert_pem, "svc", kT0 + kServingLife + kDay),
            X509_V_ERR_CERT_HAS_EXPIRED);

  absl::Status early =
      VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "svc", kT0 - 2 * kClockSkewAllowance);
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition) << early;
  EXPECT_THAT(early.message(), HasSubstr("not yet valid"));

  // Within the clock-skew allowance it is already valid.
  EXPECT_TRUE(
      VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "svc", kT0 - absl::Minutes(30)).ok());
}

TEST(CertificatesTest, IssuingFromAnExpiredCaFails) {
  KeyPair ca = MustMakeCa(kT0, 30 * kDay);
  absl::StatusOr<KeyPair> serving =
      IssueServingCertificate(ca, kNames, kT0 + 31 * kDay, kServingLife);
  EXPECT_EQ(serving.status().code(), absl::StatusCode::kFailedPrecondition) << serving.status();
}

TEST(CertificatesTest, WrongKeyDoesNotMatch) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  EXPECT_EQ(CheckKeyMatches(serving.cert_pem, ca.key_pem).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckKeyMatches(serving.cert_pem, "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckKeyMatches("", serving.key_pem).code(), absl::StatusCode::kInvalidArgument);
}

TEST(CertificatesTest, ErrorsNeverContainTheKey) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  const std::string key_body =
      serving.key_pem.substr(28, 40);  // Past "-----BEGIN PRIVATE KEY-----\n".
  const std::string damaged_key =
      "-----BEGIN PRIVATE KEY-----\nSECRETSECRETSECRET\n-----END PRIVATE KEY-----\n";
  for (const absl::Status& s : {
           CheckKeyMatches(serving.cert_pem, ca.key_pem),
           CheckKeyMatches(serving.cert_pem, damaged_key),
           IssueServingCertificate({ca.cert_pem, serving.key_pem}, kNames, kT0, kServingLife)
               .status(),
           IssueServingCertificate({ca.cert_pem, damaged_key}, kNames, kT0, kServingLife).status(),
       }) {
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), Not(HasSubstr("SECRETSECRET")));
    EXPECT_THAT(s.message(), Not(HasSubstr(key_body)));
    EXPECT_THAT(s.message(), Not(HasSubstr(ca.key_pem.substr(28, 40))));
  }
  std::string why;
  DecideRenewal(ca.cert_pem, damaged_key, serving.cert_pem, serving.key_pem, kNames, kT0, 30 * kDay,
                &why);
  EXPECT_THAT(why, Not(HasSubstr("SECRETSECRET")));
}

TEST(CertificatesTest, BadInputsAreInvalidArgument) {
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca);
  const std::string garbage =
      "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  struct Case {
    const char* scenario;
    absl::Status status;
  };
  const Case cases[] = {
      {"no names", IssueServingCertificate(ca, {}, kT0, kServingLife).status()},
      {"not a name",
       IssueServingCertificate(ca, {"svc", "not a name!"}, kT0, kServingLife).status()},
      {"garbage CA",
       IssueServingCertificate({garbage, ca.key_pem}, kNames, kT0, kServingLife).status()},
      {"empty CA", IssueServingCertificate({}, kNames, kT0, kServingLife).status()},
      {"CA key not the CA's",
       IssueServingCertificate({ca.cert_pem, serving.key_pem}, kNames, kT0, kServingLife).status()},
      {"serving certificate as CA",
       IssueServingCertificate(serving, kNames, kT0, kServingLife).status()},
      {"zero validity", IssueServingCertificate(ca, kNames, kT0, absl::ZeroDuration()).status()},
      {"negative CA validity", MakeCertificateAuthority("ca", kT0, -kDay).status()},
      {"CA past 9999", MakeCertificateAuthority("ca", kT0, absl::InfiniteDuration()).status()},
      {"empty CA name", MakeCertificateAuthority("", kT0, kCaLife).status()},
      {"long CA name", MakeCertificateAuthority(std::string(65, 'c'), kT0, kCaLife).status()},
      {"inspect garbage", InspectCertificate(garbage).status()},
      {"inspect empty", InspectCertificate("").status()},
      {"verify garbage leaf", VerifyServingCertificate(garbage, ca.cert_pem, "svc", kT0)},
      {"verify garbage bundle", VerifyServingCertificate(serving.cert_pem, garbage, "svc", kT0)},
      {"verify damaged 2nd bundle entry",
       VerifyServingCertificate(serving.cert_pem, ca.cert_pem + garbage, "svc", kT0)},
      {"verify empty bundle", VerifyServingCertificate(serving.cert_pem, "", "svc", kT0)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.code(), absl::StatusCode::kInvalidArgument)
        << c.scenario << ": " << c.status;
  }
  EXPECT_THAT(cases[1].status.message(), HasSubstr("\"not a name!\""));
}

TEST(CertificatesTest, DnsNamesAreServiceNames) {
  KeyPair ca = MustMakeCa();
  const std::string label63(63, 'a');
  for (const std::string& good :
       {std::string("svc"), std::string("a-b.ns.svc"), std::string("svc.ns.svc.cluster.local"),
        std::string("x1"), label63 + ".ns", std::string("Svc.NS")}) {
    EXPECT_TRUE(IssueServingCertificate(ca, {good}, kT0, kServingLife).ok()) << good;
  }
  for (const std::string& bad :
       {std::string(""), std::string("-a"), std::string("a-"), std::string("a..b"),
        std::string("a."), std::string(".a"), std::string("*.ns.svc"), std::string("10.0.0.1"),
        label63 + "a.ns", std::string("a_b"), std::string("not a name!"), std::string("a\0b", 3),
        std::string("svc,DNS:evil.com")}) {
    EXPECT_EQ(IssueServingCertificate(ca, {bad}, kT0, kServingLife).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(CertificatesTest, LongFirstNameLeavesTheSubjectEmpty) {
  const std::string long_name = std::string(60, 'a') + ".ns.svc";  // 67 bytes > 64.
  KeyPair ca = MustMakeCa();
  KeyPair serving = MustIssue(ca, {long_name, "svc"});
  EXPECT_TRUE(VerifyServingCertificate(serving.cert_pem, ca.cert_pem, long_name, kT0).ok());
  EXPECT_EQ(OpensslVerify(serving.cert_pem, ca.cert_pem, long_name, kT0), X509_V_OK);
}

TEST(DecideRenewalTest, Table) {
  const absl::Duration renew_before = 30 * kDay;
  const KeyPair ca = MustMakeCa();
  const KeyPair serving = MustIssue(ca);
  const KeyPair other_ca = MustMakeCa();
  const KeyPair foreign_serving = MustIssue(other_ca);
  const std::string garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  struct Case {
    const char* scenario;
    KeyPair ca;
    KeyPair serving;
    std::vector<std::string> names;
    absl::Time now;
    Renewal want;
  };
  const Case cases[] = {
      // Nothing in the Secret yet.
      {"empty secret", {}, {}, kNames, kT0, Renewal::kRecreateAll},
      {"fresh", ca, serving, kNames, kT0 + kDay, Renewal::kKeep},
      {"names in another order",
       ca,
       serving,
       {"svc.ns.svc", "svc", "svc.ns"},
       kT0 + kDay,
       Renewal::kKeep},
      {"just before the serving renewal window", ca, serving, kNames,
       kT0 + kServingLife - renew_before - absl::Seconds(1), Renewal::kKeep},
      {"serving enters its renewal window", ca, serving, kNames, kT0 + kServingLife - renew_before,
       Renewal::kIssueServing},
      {"serving near expiry", ca, serving, kNames, kT0 + kServingLife - kDay,
       Renewal::kIssueServing},
      {"serving expired", ca, serving, kNames, kT0 + kServingLife + kDay, Renewal::kIssueServing},
      {"CA near expiry", ca, serving, kNames, kT0 + kCaLife - kDay, Renewal::kRecreateAll},
      {"CA expired", ca, serving, kNames, kT0 + kCaLife + kDay, Renewal::kRecreateAll},
      {"CA not yet valid", ca, serving, kNames, kT0 - kDay, Renewal::kRecreateAll},
      {"name added",
       ca,
       serving,
       {"svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"},
       kT0 + kDay,
       Renewal::kIssueServing},
      {"name removed", ca, serving, {"svc.ns.svc"}, kT0 + kDay, Renewal::kIssueServing},
      {"garbage CA", {garbage, ca.key_pem}, serving, kNames, kT0 + kDay, Renewal::kRecreateAll},
      {"garbage CA key",
       {ca.cert_pem, "garbage"},
       serving,
       kNames,
       kT0 + kDay,
       Renewal::kRecreateAll},
      {"CA key missing", {ca.cert_pem, ""}, serving, kNames, kT0 + kDay, Renewal::kRecreateAll},
      {"CA key is another CA's",
       {ca.cert_pem, other_ca.key_pem},
       serving,
       kNames,
       kT0 + kDay,
       Renewal::kRecreateAll},
      {"serving certificate stored as CA", serving, serving, kNames, kT0 + kDay,
       Renewal::kRecreateAll},
      {"serving missing", ca, {}, kNames, kT0 + kDay, Renewal::kIssueServing},
      {"serving garbage",
       ca,
       {garbage, serving.key_pem},
       kNames,
       kT0 + kDay,
       Renewal::kIssueServing},
      {"serving key missing",
       ca,
       {serving.cert_pem, ""},
       kNames,
       kT0 + kDay,
       Renewal::kIssueServing},
      {"serving key is the CA's",
       ca,
       {serving.cert_pem, ca.key_pem},
       kNames,
       kT0 + kDay,
       Renewal::kIssueServing},
      {"serving from another CA", ca, foreign_serving, kNames, kT0 + kDay, Renewal::kIssueServing},
  };
  for (const Case& c : cases) {
    std::string why = "stale";
    const Renewal got = DecideRenewal(c.ca.cert_pem, c.ca.key_pem, c.serving.cert_pem,
                                      c.serving.key_pem, c.names, c.now, renew_before, &why);
    EXPECT_EQ(got, c.want) << c.scenario << ": got " << RenewalName(got) << " (" << why << ")";
    if (c.want == Renewal::kKeep) {
      EXPECT_THAT(why, IsEmpty()) << c.scenario;
    } else {
      EXPECT_THAT(why, Not(IsEmpty())) << c.scenario;
    }
    // Without `why`, the same decision.
    EXPECT_EQ(DecideRenewal(c.ca.cert_pem, c.ca.key_pem, c.serving.cert_pem, c.serving.key_pem,
                            c.names, c.now, renew_before),
              c.want)
        << c.scenario;
  }
}

// The rotator's loop: decide, act, decide again; after acting, the material is kept.
TEST(DecideRenewalTest, ActingOnADecisionSettlesIt) {
  const absl::Duration renew_before = 30 * kDay;
  KeyPair ca;
  KeyPair serving;
  for (absl::Time now : {kT0, kT0 + 200 * kDay, kT0 + 400 * kDay, kT0 + kCaLife}) {
    const Renewal action = DecideRenewal(ca.cert_pem, ca.key_pem, serving.cert_pem, serving.key_pem,
                                         kNames, now, renew_before);
    if (action == Renewal::kRecreateAll) ca = MustMakeCa(now, kCaLife);
    if (action != Renewal::kKeep) serving = MustIssue(ca, kNames, now, kServingLife);
    EXPECT_EQ(DecideRenewal(ca.cert_pem, ca.key_pem, serving.cert_pem, serving.key_pem, kNames, now,
                            renew_before),
              Renewal::kKeep)
        << absl::FormatTime(now);
    EXPECT_TRUE(VerifyServingCertificate(serving.cert_pem, ca.cert_pem, "svc.ns.svc", now).ok());
  }
}

}  // namespace
}  // namespace coach::webhook
