#include "operator/server/token_auth.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

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

TEST(TokenAuthTest, ReadTokenFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/token";
  std::ofstream(path) << "  tok123\n";
  EXPECT_EQ(*ReadTokenFile(path), "tok123");
  std::ofstream(path) << "\n";
  EXPECT_EQ(ReadTokenFile(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace coach::server
