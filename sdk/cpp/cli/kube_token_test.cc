#include "sdk/cpp/cli/kube_token.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/testing/test_dir.h"

namespace coach::cli {
namespace {

std::string Dir() { return ::coach::testing::FreshTestDir("kube_token"); }

// A kubeconfig with one cluster and two contexts: "tok" (a literal token) and `user_b`'s; in
// `dir`, a fresh directory unless given.
std::string WriteKubeconfig(const std::string& name, const std::string& user_b,
                            const std::string& dir = Dir()) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << R"(apiVersion: v1
kind: Config
current-context: tok
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: tok
  context: {cluster: c, user: a}
- name: other
  context: {cluster: c, user: b}
users:
- name: a
  user: {token: "tok-a-secret"}
- name: b
  user: )" << user_b << "\n";
  return path;
}

TEST(KubeTokenTest, TheCurrentContextsUserToken) {
  sdk::ConnectionOptions c;
  ASSERT_TRUE(UseKubeconfigToken(WriteKubeconfig("k1", "{tokenFile: sa-token}"), "", &c).ok());
  EXPECT_EQ(c.token, "tok-a-secret");
  EXPECT_TRUE(c.token_file.empty());
}

TEST(KubeTokenTest, ATokenFileRelativeToTheKubeconfig) {
  sdk::ConnectionOptions c;
  const std::string dir = Dir();
  ASSERT_TRUE(
      UseKubeconfigToken(WriteKubeconfig("k2", "{tokenFile: sa-token}", dir), "other", &c).ok());
  EXPECT_TRUE(c.token.empty());
  EXPECT_EQ(c.token_file, dir + "/sa-token");
}

TEST(KubeTokenTest, NoTokenNoFileAndBothFlagsAreRefusedNamingTheFlag) {
  sdk::ConnectionOptions c;
  absl::Status cert_only = UseKubeconfigToken(
      WriteKubeconfig("k3", "{client-certificate: c.crt, client-key: c.key}"), "other", &c);
  EXPECT_EQ(cert_only.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(cert_only.message()).find("--kubeconfig"), std::string::npos);
  EXPECT_NE(std::string(cert_only.message()).find("no token"), std::string::npos);

  absl::Status missing = UseKubeconfigToken(Dir() + "/no-such-kubeconfig", "", &c);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(missing.message()).find("--kubeconfig"), std::string::npos);

  sdk::ConnectionOptions both;
  both.token_file = "/x";
  EXPECT_EQ(UseKubeconfigToken(WriteKubeconfig("k4", "{token: b}"), "", &both).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(both.token, "");  // nothing taken
}

}  // namespace
}  // namespace coach::cli
