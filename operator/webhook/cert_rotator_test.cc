// The rotator's decisions against an in-memory API server: a first replica fills the Secret and
// the caBundles, a second serves the same certificate, renewal near expiry keeps the CA, a CA
// renewal keeps the old CA trusted, a lost race writes nothing, and errors name the object.

#include "operator/webhook/cert_rotator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "common/testing/fake_clock.h"
#include "operator/backend/kube/client/resource.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/webhook/certificates.h"

namespace coach::webhook {
namespace {

using json = nlohmann::json;
using kubeclient::testing::FakeKubeClient;

const kubeclient::ResourceDescriptor kMutating{
    "admissionregistration.k8s.io", "v1",  "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", false, false};
const kubeclient::ResourceDescriptor kValidating{
    "admissionregistration.k8s.io",   "v1",  "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", false, false};

class CertRotatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(client_.Create(kMutating, "", Config("MutatingWebhookConfiguration", 1)).ok());
    ASSERT_TRUE(client_.Create(kValidating, "", Config("ValidatingWebhookConfiguration", 3)).ok());
    options_.secret_namespace = "coach";
    options_.secret_name = "coach-webhook-cert";
    options_.dns_names = ServiceDnsNames("coach-webhook", "coach", "cluster.local");
    options_.mutating_configuration = "coach-trainer";
    options_.validating_configuration = "coach-trainer";
    options_.clock = &clock_;
  }

  static json Config(const std::string& kind, int webhooks) {
    json config = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                   {"kind", kind},
                   {"metadata", {{"name", "coach-trainer"}}},
                   {"webhooks", json::array()}};
    for (int i = 0; i < webhooks; ++i) {
      config["webhooks"].push_back(
          {{"name", "w" + std::to_string(i)}, {"clientConfig", {{"service", {{"name", "s"}}}}}});
    }
    return config;
  }

  json Secret() {
    absl::StatusOr<json> secret =
        client_.Get(kubeclient::resources::Secrets(), "coach", "coach-webhook-cert");
    EXPECT_TRUE(secret.ok()) << secret.status();
    return secret.ok() ? *secret : json::object();
  }

  std::string SecretField(const std::string& key) {
    std::string out;
    absl::Base64Unescape(Secret()["data"].value(key, ""), &out);
    return out;
  }

  // Every webhook's caBundle, decoded.
  std::vector<std::string> Bundles() {
    std::vector<std::string> out;
    for (const auto& resource : {kMutating, kValidating}) {
      absl::StatusOr<json> config = client_.Get(resource, "", "coach-trainer");
      EXPECT_TRUE(config.ok());
      for (const json& webhook : (*config)["webhooks"]) {
        std::string bundle;
        absl::Base64Unescape(webhook["clientConfig"].value("caBundle", ""), &bundle);
        out.push_back(bundle);
      }
    }
    return out;
  }

  FakeKubeClient client_;
  FakeClock clock_{absl::FromUnixSeconds(1800000000)};
  CertRotatorOptions options_;
};

TEST_F(CertRotatorTest, FirstReplicaMakesTheSecretAndEveryCaBundle) {
  CertRotator rotator(&client_, options_);
  absl::StatusOr<ServingMaterial> material = rotator.Sync();
  ASSERT_TRUE(material.ok()) << material.status();
  EXPECT_TRUE(material->ca_bundle.ok()) << material->ca_bundle;
  EXPECT_EQ(SecretField("tls.crt"), material->cert_pem);
  EXPECT_EQ(SecretField("tls.key"), material->key_pem);
  EXPECT_EQ(SecretField("ca.crt"), material->ca_bundle_pem);
  EXPECT_TRUE(VerifyServingCertificate(material->cert_pem, material->ca_bundle_pem,
                                       "coach-webhook.coach.svc", clock_.Now())
                  .ok());
  const std::vector<std::string> bundles = Bundles();
  ASSERT_EQ(bundles.size(), 4u);
  for (const std::string& bundle : bundles) EXPECT_EQ(bundle, material->ca_bundle_pem);
}

TEST_F(CertRotatorTest, SecondReplicaServesTheSameCertificateAndWritesNothing) {
  absl::StatusOr<ServingMaterial> first = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(first.ok()) << first.status();
  client_.ClearCalls();
  absl::StatusOr<ServingMaterial> second = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->cert_pem, first->cert_pem);
  EXPECT_TRUE(client_.calls("Create").empty());
  EXPECT_TRUE(client_.calls("Update").empty());
  EXPECT_TRUE(client_.calls("Patch").empty());
}

TEST_F(CertRotatorTest, ServingCertificateNearExpiryIsRenewedUnderTheSameCa) {
  absl::StatusOr<ServingMaterial> first = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(first.ok()) << first.status();
  clock_.Advance(options_.serving_validity - options_.renew_before + absl::Hours(1));
  absl::StatusOr<ServingMaterial> renewed = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_NE(renewed->cert_pem, first->cert_pem);
  EXPECT_EQ(renewed->ca_bundle_pem, first->ca_bundle_pem);
  EXPECT_EQ(SecretField("tls.crt"), renewed->cert_pem);
  absl::StatusOr<CertificateFacts> facts = InspectCertificate(renewed->cert_pem);
  ASSERT_TRUE(facts.ok());
  EXPECT_GT(facts->not_after, clock_.Now() + options_.renew_before);
}

TEST_F(CertRotatorTest, CaRenewalKeepsTheOldCaTrustedWhileItIsValid) {
  ASSERT_TRUE(CertRotator(&client_, options_).Sync().ok());
  // Just before the CA is due: a serving certificate (renewed yearly) under the old CA.
  clock_.Advance(options_.ca_validity - options_.renew_before - absl::Hours(1));
  absl::StatusOr<ServingMaterial> first = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(first.ok()) << first.status();
  clock_.Advance(absl::Hours(2));
  absl::StatusOr<ServingMaterial> renewed = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_TRUE(absl::EndsWith(renewed->ca_bundle_pem, first->ca_bundle_pem));
  EXPECT_NE(renewed->ca_bundle_pem, first->ca_bundle_pem);
  // A replica still serving the old certificate is trusted by the new caBundle.
  for (const std::string& bundle : Bundles()) EXPECT_EQ(bundle, renewed->ca_bundle_pem);
  EXPECT_TRUE(VerifyServingCertificate(first->cert_pem, renewed->ca_bundle_pem,
                                       "coach-webhook.coach.svc", clock_.Now())
                  .ok());
}

TEST_F(CertRotatorTest, NewNamesGetANewServingCertificate) {
  ASSERT_TRUE(CertRotator(&client_, options_).Sync().ok());
  options_.dns_names.push_back("localhost");
  absl::StatusOr<ServingMaterial> renamed = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  EXPECT_TRUE(
      VerifyServingCertificate(renamed->cert_pem, renamed->ca_bundle_pem, "localhost", clock_.Now())
          .ok());
}

TEST_F(CertRotatorTest, LostRaceForTheSecretIsAbortedAndTheNextPassReadsTheWinner) {
  ASSERT_TRUE(CertRotator(&client_, options_).Sync().ok());
  clock_.Advance(options_.serving_validity);  // both replicas want to renew
  client_.FailNext("Update", absl::AbortedError("the object has been modified"));
  CertRotator loser(&client_, options_);
  EXPECT_TRUE(absl::IsAborted(loser.Sync().status()));
  absl::StatusOr<ServingMaterial> next = loser.Sync();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->cert_pem, SecretField("tls.crt"));
}

TEST_F(CertRotatorTest, SecretErrorsNameTheSecretAndCaBundleErrorsStillServe) {
  client_.FailNext("Get", absl::PermissionDeniedError("secrets is forbidden"));
  absl::Status denied = CertRotator(&client_, options_).Sync().status();
  EXPECT_TRUE(absl::IsPermissionDenied(denied));
  EXPECT_TRUE(absl::StrContains(denied.message(), "Secret coach/coach-webhook-cert")) << denied;

  options_.validating_configuration = "missing";
  absl::StatusOr<ServingMaterial> material = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(material.ok()) << material.status();
  EXPECT_TRUE(absl::IsNotFound(material->ca_bundle));
  EXPECT_TRUE(
      absl::StrContains(material->ca_bundle.message(), "ValidatingWebhookConfiguration missing"))
      << material->ca_bundle;
}

TEST_F(CertRotatorTest, GarbageInTheSecretIsReplaced) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "coach-webhook-cert"}, {"namespace", "coach"}}},
                 {"type", "Opaque"},
                 {"data", {{"tls.crt", absl::Base64Escape("not a certificate")}}}};
  ASSERT_TRUE(client_.Create(kubeclient::resources::Secrets(), "coach", secret).ok());
  absl::StatusOr<ServingMaterial> material = CertRotator(&client_, options_).Sync();
  ASSERT_TRUE(material.ok()) << material.status();
  EXPECT_TRUE(VerifyServingCertificate(material->cert_pem, material->ca_bundle_pem, "coach-webhook",
                                       clock_.Now())
                  .ok());
  EXPECT_EQ(Secret().value("type", ""), "Opaque");
}

}  // namespace
}  // namespace coach::webhook
