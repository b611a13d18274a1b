#include "operator/server/token_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <thread>
#include <vector>

#include "common/testing/test_dir.h"

namespace coach::server {
namespace {

TEST(TokenAuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(TokenAuthTest, Check) {
  TokenAuth off("");
  EXPECT_TRUE(off.Check(nullptr).ok());
  TokenAuth auth("s3cret");
  EXPECT_EQ(auth.Check(nullptr).code(), absl::StatusCode::kUnauthenticated);
  std::string wrong = "Bearer nope";
  EXPECT_EQ(auth.Check(&wrong).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(std::string(auth.Check(&wrong).message()).find("s3cret"), std::string::npos);
  std::string basic = "Basic s3cret";
  EXPECT_EQ(auth.Check(&basic).code(), absl::StatusCode::kUnauthenticated);
  std::string right = "Bearer s3cret";
  EXPECT_TRUE(auth.Check(&right).ok());
}

// A file of that name in a fresh directory: no test finds another's file there.
std::string TmpPath(const std::string& name) {
  return ::coach::testing::FreshTestDir("token_auth") + "/" + name;
}

void WriteMode(const std::string& path, const std::string& content, mode_t mode) {
  std::ofstream(path) << content;
  chmod(path.c_str(), mode);
}

TEST(TokenAuthTest, ReadTokenFile) {
  const std::string path = TmpPath("token");
  WriteMode(path, "  tok123-long-enough-token\n", 0600);
  EXPECT_EQ(*ReadTokenFile(path), "tok123-long-enough-token");
  WriteMode(path, "\n", 0600);
  EXPECT_EQ(ReadTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(TokenAuthTest, ReadTokenFileRefusesWeakFiles) {
  const std::string path = TmpPath("weak");
  WriteMode(path, "0123456789abcdef-secret\n", 0644);
  absl::StatusOr<std::string> world = ReadTokenFile(path);
  EXPECT_EQ(world.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(world.status().message(), ::testing::HasSubstr("readable by every user (mode 0644)"));
  EXPECT_THAT(world.status().message(), ::testing::Not(::testing::HasSubstr("secret")));
  WriteMode(path, "0123456789abcdef-secret\n", 0602);
  EXPECT_THAT(ReadTokenFile(path).status().message(), ::testing::HasSubstr("writable"));
  // Group-readable, as Kubernetes mounts a Secret for the pod's fsGroup: accepted.
  WriteMode(path, "0123456789abcdef-secret\n", 0440);
  EXPECT_TRUE(ReadTokenFile(path).ok());
  WriteMode(path, "x\n", 0600);
  absl::StatusOr<std::string> short_token = ReadTokenFile(path);
  EXPECT_THAT(short_token.status().message(),
              ::testing::HasSubstr("1 characters; use at least 16"));
  WriteMode(path, "0123456789 abcdef\n", 0600);
  EXPECT_THAT(ReadTokenFile(path).status().message(), ::testing::HasSubstr("whitespace"));
  EXPECT_THAT(ReadTokenFile(::coach::testing::FreshTestDir("token_auth")).status().message(),
              ::testing::HasSubstr("not a regular file"));
}

TEST(TokenAuthTest, EnsureOwnTokenFileCreatesOnceAndKeeps) {
  const std::string path = TmpPath("own-token");
  absl::StatusOr<std::string> first = EnsureOwnTokenFile(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 64u);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  absl::StatusOr<std::string> again = EnsureOwnTokenFile(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  chmod(path.c_str(), 0640);
  EXPECT_THAT(EnsureOwnTokenFile(path).status().message(), ::testing::HasSubstr("chmod 600"));
}

TEST(TokenAuthTest, EnsureOwnTokenFileRacesAgreeOnOneToken) {
  const std::string path = TmpPath("raced-token");
  std::vector<std::string> tokens(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { tokens[i] = EnsureOwnTokenFile(path).value_or("error"); });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& t : tokens) EXPECT_EQ(t, tokens[0]);
  EXPECT_NE(tokens[0], "error");
}

}  // namespace
}  // namespace coach::server
