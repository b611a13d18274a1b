// The webhooks served for real over TLS on loopback: the certificate made in a Secret (an
// in-memory API server) and trusted through its CA, a review refused in upstream's words, the
// metrics counted; a certificate directory re-read and served from the next handshake; a start
// without any certificate given up on.

#include "operator/webhook/admission_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "common/testing/test_dir.h"
#include "operator/backend/kube/client/resource.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/webhook/certificates.h"

namespace coach::webhook {
namespace {

using json = nlohmann::json;
using kubeclient::testing::FakeKubeClient;

const std::string kReview =
    json({{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u1"},
            {"operation", "CREATE"},
            {"namespace", "team"},
            {"kind",
             {{"group", "trainer.kubeflow.org"}, {"version", "v1alpha1"}, {"kind", "TrainJob"}}},
            {"object",
             {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
              {"kind", "TrainJob"},
              {"metadata", {{"name", "j"}, {"namespace", "team"}}},
              {"spec",
               {{"runtimeRef",
                 {{"apiGroup", "trainer.kubeflow.org"},
                  {"kind", "ClusterTrainingRuntime"},
                  {"name", "gone"}}}}}}}}}})
        .dump();

// A client on "localhost" that trusts only `ca_pem`.
std::unique_ptr<httplib::SSLClient> ClientTrusting(int port, const std::string& ca_pem) {
  auto client = std::make_unique<httplib::SSLClient>("localhost", port);
  X509_STORE* store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
  }
  BIO_free(bio);
  client->set_ca_cert_store(store);
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(3);
  client->set_read_timeout(5);
  return client;
}

std::string DecodedSecretField(FakeKubeClient& client, const std::string& key) {
  absl::StatusOr<json> secret =
      client.Get(kubeclient::resources::Secrets(), "coach", "coach-webhook-cert");
  std::string out;
  if (secret.ok()) absl::Base64Unescape((*secret)["data"].value(key, ""), &out);
  return out;
}

AdmissionServerOptions Options(metrics::Registry* registry) {
  AdmissionServerOptions options;
  options.listen = "127.0.0.1:0";
  options.rotator.secret_namespace = "coach";
  options.rotator.secret_name = "coach-webhook-cert";
  options.rotator.dns_names = {"localhost"};
  options.registry = registry;
  options.first_certificate_wait = absl::Seconds(2);
  return options;
}

RuntimeFinder NoRuntimes() {
  return [](const std::string&, const std::string&,
            const std::string&) -> absl::StatusOr<std::optional<json>> { return std::nullopt; };
}

TEST(AdmissionServerTest, ServesTheCertificateItKeepsInTheSecret) {
  FakeKubeClient client;
  metrics::Registry registry;
  absl::StatusOr<std::unique_ptr<AdmissionServer>> server =
      AdmissionServer::Start(&client, NoRuntimes(), Options(&registry));
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string ca = DecodedSecretField(client, "ca.crt");
  ASSERT_FALSE(ca.empty());

  auto https = ClientTrusting((*server)->port(), ca);
  auto res = https->Post(kTrainJobValidatorPath, kReview, "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  const json answer = json::parse(res->body)["response"];
  EXPECT_EQ(answer["uid"], "u1");
  EXPECT_FALSE(answer["allowed"].get<bool>());
  EXPECT_TRUE(absl::StrContains(answer["status"]["message"].get<std::string>(),
                                "specified clusterTrainingRuntime must be created before"))
      << answer.dump();
  auto bad = https->Post(kTrainJobValidatorPath, "{", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto get = https->Get(kTrainJobValidatorPath);
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);

  const std::string metrics = registry.Render();
  EXPECT_TRUE(absl::StrContains(
      metrics,
      "coach_admission_reviews_total{webhook=\"validator.trainjob.trainer.kubeflow.org\","
      "outcome=\"denied\"} 1"))
      << metrics;
  EXPECT_TRUE(absl::StrContains(metrics, "outcome=\"malformed\"} 1")) << metrics;

  // A second replica serves the same certificate, trusted through the same CA.
  absl::StatusOr<std::unique_ptr<AdmissionServer>> second =
      AdmissionServer::Start(&client, NoRuntimes(), Options(nullptr));
  ASSERT_TRUE(second.ok()) << second.status();
  auto res2 = ClientTrusting((*second)->port(), ca)
                  ->Post(kTrainJobValidatorPath, kReview, "application/json");
  ASSERT_TRUE(res2) << httplib::to_string(res2.error());
  EXPECT_EQ(res2->status, 200);
}

void WritePair(const std::string& dir, const KeyPair& pair) {
  std::ofstream(dir + "/tls.crt") << pair.cert_pem;
  std::ofstream(dir + "/tls.key") << pair.key_pem;
}

TEST(AdmissionServerTest, CertificateDirectoryIsReadAgainAndServedFromTheNextHandshake) {
  const std::string dir = coach::testing::FreshTestDir("webhook-certs");
  const absl::Time now = absl::Now();
  absl::StatusOr<KeyPair> ca1 = MakeCertificateAuthority("first", now, absl::Hours(24));
  absl::StatusOr<KeyPair> ca2 = MakeCertificateAuthority("second", now, absl::Hours(24));
  ASSERT_TRUE(ca1.ok() && ca2.ok());
  absl::StatusOr<KeyPair> leaf1 = IssueServingCertificate(*ca1, {"localhost"}, now, absl::Hours(1));
  absl::StatusOr<KeyPair> leaf2 = IssueServingCertificate(*ca2, {"localhost"}, now, absl::Hours(1));
  ASSERT_TRUE(leaf1.ok() && leaf2.ok());
  WritePair(dir, *leaf1);

  FakeKubeClient client;
  AdmissionServerOptions options = Options(nullptr);
  options.cert_dir = dir;
  options.refresh = absl::Milliseconds(100);
  absl::StatusOr<std::unique_ptr<AdmissionServer>> server =
      AdmissionServer::Start(&client, NoRuntimes(), options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_TRUE(ClientTrusting(port, ca1->cert_pem)
                  ->Post(kTrainJobValidatorPath, kReview, "application/json"));
  EXPECT_TRUE(client.calls("Get").empty());  // the directory's: no Secret read

  WritePair(dir, *leaf2);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  bool rotated = false;
  while (!rotated && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
    rotated = static_cast<bool>(ClientTrusting(port, ca2->cert_pem)
                                    ->Post(kTrainJobValidatorPath, kReview, "application/json"));
  }
  EXPECT_TRUE(rotated);
  EXPECT_FALSE(ClientTrusting(port, ca1->cert_pem)
                   ->Post(kTrainJobValidatorPath, kReview, "application/json"));
}

TEST(AdmissionServerTest, NoCertificateInTimeIsAnError) {
  FakeKubeClient client;
  client.SetErrorHook([](const kubeclient::testing::FakeCall&) {
    return absl::UnavailableError("API server down");
  });
  AdmissionServerOptions options = Options(nullptr);
  options.first_certificate_wait = absl::Milliseconds(1500);
  absl::StatusOr<std::unique_ptr<AdmissionServer>> server =
      AdmissionServer::Start(&client, NoRuntimes(), options);
  EXPECT_TRUE(absl::IsUnavailable(server.status())) << server.status();
  EXPECT_TRUE(absl::StrContains(server.status().message(), "API server down"));
}

}  // namespace
}  // namespace coach::webhook
