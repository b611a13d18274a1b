#include "operator/backend/kube/client/kube_config.h"

#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace coach::kubeclient {
namespace {

std::string B64(const std::string& s) { return absl::Base64Escape(s); }

std::string Config(const std::string& cluster_extra, const std::string& user_extra,
                   const std::string& current = "dev") {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: )",
                      current, R"(
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: team-a}
- name: other
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443/
)",
                      cluster_extra, R"(
- name: c2
  cluster: {server: "https://other:443", insecure-skip-tls-verify: true}
users:
- name: u1
  user:
)",
                      user_extra, R"(
- name: u2
  user: {token: abc}
)");
}

TEST(KubeConfigTest, CurrentContextWithBase64Data) {
  std::string yaml = Config(absl::StrCat("    certificate-authority-data: ", B64("CA PEM")),
                            absl::StrCat("    client-certificate-data: ", B64("CERT PEM"),
                                         "\n    client-key-data: ", B64("KEY PEM")));
  auto c = ParseKubeConfig(yaml);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT PEM");
  EXPECT_EQ(c->client_key_pem, "KEY PEM");
  EXPECT_EQ(c->default_namespace, "team-a");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_TRUE(c->token.empty());
}

TEST(KubeConfigTest, NamedContextTokenAndInsecure) {
  auto c = ParseKubeConfig(Config("", "    token: x"), "other");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://other:443");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token, "abc");
  EXPECT_EQ(c->default_namespace, "default");
}

TEST(KubeConfigTest, RelativeFilesResolveAgainstTheKubeconfigDir) {
  std::string dir = ::testing::TempDir() + "/kc";
  ::mkdir(dir.c_str(), 0700);
  std::ofstream(dir + "/config") << Config(
      "    certificate-authority: pki/ca.crt",
      "    client-certificate: /abs/cert.pem\n    client-key: key.pem\n"
      "    tokenFile: tok");
  auto c = LoadKubeConfigFile(dir + "/config");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_file, dir + "/pki/ca.crt");
  EXPECT_EQ(c->client_cert_file, "/abs/cert.pem");
  EXPECT_EQ(c->client_key_file, dir + "/key.pem");
  EXPECT_EQ(c->token_file, dir + "/tok");
  EXPECT_NE(c->source.find(dir + "/config"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(LoadKubeConfigFile(dir + "/nope").status()));
}

void ExpectError(const absl::StatusOr<KubeConfig>& c, const std::string& field) {
  ASSERT_FALSE(c.ok()) << "expected an error naming " << field;
  EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
  EXPECT_NE(c.status().message().find(field), std::string::npos) << c.status();
}

TEST(KubeConfigTest, BadFieldsAreNamed) {
  ExpectError(
      ParseKubeConfig(Config("    certificate-authority-data: '%%%not base64'", "    token: t")),
      "clusters[0].cluster.certificate-authority-data: invalid base64");
  ExpectError(ParseKubeConfig(Config("", absl::StrCat("    client-certificate-data: ", B64("C")))),
              "users[0].user.client-key");
  ExpectError(
      ParseKubeConfig(Config("", "    client-key-data: '!!'\n    client-certificate-data: 'QQ=='")),
      "users[0].user.client-key-data: invalid base64");
  ExpectError(ParseKubeConfig(Config("", "    token: t"), "missing"),
              "no contexts entry named \"missing\"");
  ExpectError(ParseKubeConfig(Config("", "    token: t", "\"\"")), "current-context");
  ExpectError(ParseKubeConfig(Config("    insecure-skip-tls-verify: \"yes\"", "    token: t")),
              "clusters[0].cluster.insecure-skip-tls-verify: must be true or false");
  ExpectError(
      ParseKubeConfig(Config("    insecure-skip-tls-verify: true\n    certificate-authority: x",
                             "    token: t")),
      "clusters[0].cluster.insecure-skip-tls-verify");
  ExpectError(ParseKubeConfig(Config("", "    exec: {command: aws}")),
              "users[0].user.exec: not supported");
  ExpectError(ParseKubeConfig(R"(current-context: a
contexts: [{name: a, context: {cluster: nope, user: u}}]
clusters: []
)"),
              "contexts[0].context.cluster: no clusters entry named \"nope\"");
  ExpectError(ParseKubeConfig(R"(current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {server: "ftp://x"}}]
)"),
              "clusters[0].cluster.server");
  ExpectError(ParseKubeConfig(R"(current-context: a
contexts: [{name: a, context: {cluster: c}}]
clusters: [{name: c, cluster: {certificate-authority: x}}]
)"),
              "clusters[0].cluster.server: required");
  ExpectError(ParseKubeConfig("clusters: [unterminated"), "kubeconfig");
  ExpectError(ParseKubeConfig("current-context: a\ncontexts: {a: b}\n"),
              "contexts: must be a list");
}

TEST(InClusterConfigTest, ReadsTheServiceAccount) {
  std::string dir = ::testing::TempDir() + "/sa";
  ::mkdir(dir.c_str(), 0700);
  InClusterOptions o;
  o.service_account_dir = dir;
  o.host = "10.96.0.1";
  o.port = "443";
  EXPECT_TRUE(absl::IsNotFound(InClusterConfig(o).status()));  // no token yet
  std::ofstream(dir + "/token") << "sa-token\n";
  std::ofstream(dir + "/ca.crt") << "CA";
  std::ofstream(dir + "/namespace") << "coach-system\n";
  auto c = InClusterConfig(o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, dir + "/token");
  EXPECT_EQ(c->ca_file, dir + "/ca.crt");
  EXPECT_EQ(c->default_namespace, "coach-system");
  o.host = "fd00::1";
  EXPECT_EQ(InClusterConfig(o)->server, "https://[fd00::1]:443");

  TokenSource tokens(*c);
  EXPECT_EQ(*tokens.Token(), "sa-token");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::ofstream(dir + "/token", std::ios::trunc) << "rotated-token";
  EXPECT_EQ(*tokens.Token(), "rotated-token");
  ::unlink((dir + "/token").c_str());
  EXPECT_EQ(*tokens.Token(), "rotated-token");  // a vanished file keeps the last token

  InClusterOptions none;
  none.service_account_dir = dir;
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_TRUE(absl::IsNotFound(InClusterConfig(none).status()));
}

}  // namespace
}  // namespace coach::kubeclient
