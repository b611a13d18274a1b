#include "operator/backend/kube/ssh_auth_keys.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace coach::backend::kube {
namespace {

std::string RunAndRead(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  return out;
}

TEST(SshAuthKeysTest, KeyPairIsWhatOpenSshReadsAndDerives) {
  absl::StatusOr<SshKeyPair> pair = NewSshKeyPair();
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_TRUE(absl::StartsWith(pair->private_pem, "-----BEGIN EC PRIVATE KEY-----\n"));
  ASSERT_TRUE(absl::StartsWith(pair->authorized_key, "ecdsa-sha2-nistp521 AAAA"));
  ASSERT_TRUE(absl::EndsWith(pair->authorized_key, "\n"));

  // ssh-keygen derives the public key from the private one: it must be the line we wrote.
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/id_test_key";
  {
    std::ofstream f(path);
    f << pair->private_pem;
  }
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  const std::string derived = RunAndRead("ssh-keygen -y -f " + path);
  std::remove(path.c_str());
  std::vector<std::string> ours = absl::StrSplit(pair->authorized_key, absl::ByAnyChar(" \n"));
  std::vector<std::string> theirs = absl::StrSplit(derived, absl::ByAnyChar(" \n"));
  ASSERT_GE(ours.size(), 2u);
  ASSERT_GE(theirs.size(), 2u) << derived;
  EXPECT_EQ(ours[0], theirs[0]);
  EXPECT_EQ(ours[1], theirs[1]);
}

TEST(SshAuthKeysTest, EveryPairIsFresh) {
  absl::StatusOr<SshKeyPair> a = NewSshKeyPair();
  absl::StatusOr<SshKeyPair> b = NewSshKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->private_pem, b->private_pem);
  EXPECT_NE(a->authorized_key, b->authorized_key);
}

TEST(SshAuthKeysTest, FillsOnlyAnEmptySshAuthSecret) {
  nlohmann::json secret = {{"kind", "Secret"}, {"type", kSecretTypeSshAuth}};
  ASSERT_TRUE(FillSshAuthSecret(secret).ok());
  std::string pem, pub;
  ASSERT_TRUE(absl::Base64Unescape(secret["data"][kSshPrivateKeyField].get<std::string>(), &pem));
  ASSERT_TRUE(absl::Base64Unescape(secret["data"][kSshPublicKeyField].get<std::string>(), &pub));
  EXPECT_TRUE(absl::StartsWith(pem, "-----BEGIN EC PRIVATE KEY-----"));
  EXPECT_TRUE(absl::StartsWith(pub, "ecdsa-sha2-nistp521 "));

  const nlohmann::json filled = secret;
  ASSERT_TRUE(FillSshAuthSecret(secret).ok());
  EXPECT_EQ(secret, filled);  // data present: kept

  nlohmann::json opaque = {{"kind", "Secret"}, {"type", "Opaque"}};
  ASSERT_TRUE(FillSshAuthSecret(opaque).ok());
  EXPECT_FALSE(opaque.contains("data"));
  nlohmann::json config_map = {{"kind", "ConfigMap"}, {"type", kSecretTypeSshAuth}};
  ASSERT_TRUE(FillSshAuthSecret(config_map).ok());
  EXPECT_FALSE(config_map.contains("data"));
}

}  // namespace
}  // namespace coach::backend::kube
