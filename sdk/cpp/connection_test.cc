#include "sdk/cpp/connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <map>

namespace coach::sdk {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

EnvLookup FakeEnv(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string WriteTemp(const std::string& name, const std::string& contents) {
  std::string path = std::string(::testing::TempDir()) + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

TEST(ResolveConnectionTest, DefaultsWithNothingSet) {
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection({}, FakeEnv({}));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->server, "127.0.0.1:7450");
  EXPECT_TRUE(settings->token.empty());
  EXPECT_FALSE(settings->tls);
}

TEST(ResolveConnectionTest, EnvironmentFillsEmptyOptions) {
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection(
      {}, FakeEnv({{"COACH_SERVER", "coach.example:443"}, {"COACH_TOKEN", "s3cret\n"}}));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->server, "coach.example:443");
  EXPECT_EQ(settings->token, "s3cret");
}

TEST(ResolveConnectionTest, OptionsWinOverEnvironment) {
  ConnectionOptions options;
  options.server = "10.0.0.1:7450";
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection(options, FakeEnv({{"COACH_SERVER", "other:1"}}));
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->server, "10.0.0.1:7450");
}

TEST(ResolveConnectionTest, EnvironmentIgnoredWhenDisabled) {
  ConnectionOptions options;
  options.use_environment = false;
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection(options, FakeEnv({{"COACH_SERVER", "other:1"}, {"COACH_TOKEN", "t"}}));
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->server, "127.0.0.1:7450");
  EXPECT_TRUE(settings->token.empty());
}

TEST(ResolveConnectionTest, LocalOperatorsOwnTokenIsReadForLocalServersOnly) {
  const std::string state = std::string(::testing::TempDir()) + "/state";
  mkdir(state.c_str(), 0700);
  WriteTemp("state/api-token", "own-token-0123456789\n");
  const std::string home = std::string(::testing::TempDir()) + "/home";
  mkdir(home.c_str(), 0700);
  mkdir((home + "/.local").c_str(), 0700);
  mkdir((home + "/.local/state").c_str(), 0700);
  mkdir((home + "/.local/state/coach").c_str(), 0700);
  WriteTemp("home/.local/state/coach/api-token", "home-token-0123456789\n");

  auto token_for = [](std::map<std::string, std::string> env) {
    absl::StatusOr<ConnectionSettings> settings = ResolveConnection({}, FakeEnv(env));
    return settings.ok() ? settings->token : settings.status().ToString();
  };
  EXPECT_EQ(token_for({{"COACH_STATE_DIR", state}}), "own-token-0123456789");
  EXPECT_EQ(token_for({{"HOME", home}}), "home-token-0123456789");
  EXPECT_EQ(token_for({{"HOME", home}, {"COACH_SERVER", "localhost:9"}}), "home-token-0123456789");
  EXPECT_EQ(token_for({{"HOME", home}, {"COACH_SERVER", "unix:/run/coach.sock"}}),
            "home-token-0123456789");
  // Never sent to another host, nor when a token is given.
  EXPECT_EQ(token_for({{"HOME", home}, {"COACH_SERVER", "coach.example:7450"}}), "");
  EXPECT_EQ(token_for({{"HOME", home}, {"COACH_SERVER", "10.0.0.1:7450"}}), "");
  EXPECT_EQ(token_for({{"HOME", home}, {"COACH_TOKEN", "given-token"}}), "given-token");
  // Absent: no token, no error.
  EXPECT_EQ(token_for({{"HOME", home + "/nowhere"}}), "");
  EXPECT_EQ(token_for({}), "");
  ConnectionOptions no_env;
  no_env.use_environment = false;
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection(no_env, FakeEnv({{"COACH_STATE_DIR", state}}));
  ASSERT_TRUE(settings.ok());
  EXPECT_EQ(settings->token, "");
}

TEST(ResolveConnectionTest, TokenFileIsReadAndTrimmed) {
  ConnectionOptions options;
  options.token_file = WriteTemp("token", "  abc.def\n");
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection(options, FakeEnv({}));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(settings->token, "abc.def");
}

TEST(ResolveConnectionTest, UnreadableTokenFileNamesTheFlag) {
  ConnectionOptions options;
  options.token_file = "/nonexistent/token";
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection(options, FakeEnv({}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(settings.status().message(), HasSubstr("--token-file"));
  EXPECT_THAT(settings.status().message(), HasSubstr("/nonexistent/token"));
}

TEST(ResolveConnectionTest, UnreadableCaFromEnvironmentNamesTheVariable) {
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection({}, FakeEnv({{"COACH_TLS_CA", "/nonexistent/ca.pem"}}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(settings.status().message(), HasSubstr("COACH_TLS_CA"));
}

TEST(ResolveConnectionTest, EmptyCaFileIsRejected) {
  ConnectionOptions options;
  options.tls_ca = WriteTemp("empty-ca.pem", "");
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection(options, FakeEnv({}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(settings.status().message(), HasSubstr("--tls-ca"));
}

TEST(ResolveConnectionTest, CaEnablesTlsAndLoadsFiles) {
  ConnectionOptions options;
  options.tls_ca = WriteTemp("ca.pem", "CA");
  options.tls_cert = WriteTemp("cert.pem", "CERT");
  options.tls_key = WriteTemp("key.pem", "KEY");
  options.tls_server_name = "coach.internal";
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection(options, FakeEnv({}));
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_TRUE(settings->tls);
  EXPECT_EQ(settings->ca_pem, "CA");
  EXPECT_EQ(settings->cert_pem, "CERT");
  EXPECT_EQ(settings->key_pem, "KEY");
  EXPECT_EQ(settings->server_name, "coach.internal");
}

TEST(ResolveConnectionTest, CertWithoutKeyIsRejected) {
  ConnectionOptions options;
  options.tls_ca = WriteTemp("ca2.pem", "CA");
  options.tls_cert = WriteTemp("cert2.pem", "CERT");
  absl::StatusOr<ConnectionSettings> settings = ResolveConnection(options, FakeEnv({}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(settings.status().message(), HasSubstr("--tls-cert"));
}

TEST(ResolveConnectionTest, KeyFromEnvironmentWithoutCertIsRejected) {
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection({}, FakeEnv({{"COACH_TLS_KEY", "/tmp/key.pem"}}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(settings.status().message(), HasSubstr("COACH_TLS_KEY"));
}

TEST(ResolveConnectionTest, ServerNameWithoutTlsIsRejected) {
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection({}, FakeEnv({{"COACH_TLS_SERVER_NAME", "x"}}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResolveConnectionTest, TokenWithInnerWhitespaceIsRejectedWithoutEchoingIt) {
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection({}, FakeEnv({{"COACH_TOKEN", "abc def-secret"}}));
  EXPECT_EQ(settings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(settings.status().message(), HasSubstr("COACH_TOKEN"));
  EXPECT_THAT(settings.status().message(), Not(HasSubstr("secret")));
}

TEST(ResolveConnectionTest, DebugStringNeverHoldsTheToken) {
  absl::StatusOr<ConnectionSettings> settings =
      ResolveConnection({}, FakeEnv({{"COACH_TOKEN", "topsecret"}}));
  ASSERT_TRUE(settings.ok());
  EXPECT_THAT(settings->DebugString(), Not(HasSubstr("topsecret")));
  EXPECT_THAT(settings->DebugString(), HasSubstr("token"));
}

TEST(CreateChannelTest, PlaintextAndTlsChannelsAreCreatedLazily) {
  ConnectionSettings plaintext;
  plaintext.server = "127.0.0.1:1";
  EXPECT_TRUE(CreateChannel(plaintext).ok());
  ConnectionSettings tls = plaintext;
  tls.tls = true;
  tls.server_name = "coach.internal";
  EXPECT_TRUE(CreateChannel(tls).ok());
}

}  // namespace
}  // namespace coach::sdk
