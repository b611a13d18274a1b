// The pure pieces of the REST edge: error mapping, retry timing, batch splitting, options from env.
// (Retry-After parsing and path encoding are common/http's, tested in common/http.)
#include <cmath>
#include <map>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/log_batch.h"
#include "integrations/mlflow/rest_errors.h"
#include "integrations/mlflow/rest_retry.h"
#include "integrations/mlflow/rest_tracking_client.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow {
namespace {

using internal::MapHttpError;

TEST(MapHttpErrorTest, MapsMlflowCodesAndHttpStatuses) {
  EXPECT_TRUE(MapHttpError(200, "{}", "x").ok());
  EXPECT_TRUE(absl::IsNotFound(
      MapHttpError(404, R"({"error_code":"RESOURCE_DOES_NOT_EXIST","message":"no run"})", "x")));
  EXPECT_TRUE(absl::IsInvalidArgument(
      MapHttpError(400, R"({"error_code":"INVALID_PARAMETER_VALUE","message":"bad"})", "x")));
  EXPECT_TRUE(absl::IsAlreadyExists(
      MapHttpError(400, R"({"error_code":"RESOURCE_ALREADY_EXISTS","message":"taken"})", "x")));
  EXPECT_TRUE(absl::IsAlreadyExists(MapHttpError(409, "conflict", "x")));
  EXPECT_TRUE(absl::IsUnauthenticated(MapHttpError(401, "You are not authenticated.", "x")));
  EXPECT_TRUE(absl::IsPermissionDenied(MapHttpError(403, "Permission denied", "x")));
  EXPECT_TRUE(
      absl::IsUnavailable(MapHttpError(429, R"({"error_code":"REQUEST_LIMIT_EXCEEDED"})", "x")));
  EXPECT_TRUE(absl::IsUnavailable(MapHttpError(500, "<html>oops</html>", "x")));
  EXPECT_TRUE(absl::IsUnavailable(MapHttpError(503, "", "x")));
  EXPECT_TRUE(absl::IsUnavailable(MapHttpError(408, "", "x")));
  EXPECT_TRUE(absl::IsInvalidArgument(MapHttpError(400, "plain text", "x")));
  EXPECT_TRUE(absl::IsNotFound(MapHttpError(404, "<html>not here</html>", "x")));
  absl::Status s =
      MapHttpError(400, R"({"error_code":"INVALID_PARAMETER_VALUE","message":"bad key"})",
                   "POST /api/2.0/mlflow/runs/log-batch");
  EXPECT_EQ(
      s.message(),
      "MLflow POST /api/2.0/mlflow/runs/log-batch: HTTP 400 INVALID_PARAMETER_VALUE: bad key");
}

TEST(RetryTest, RetryableStatuses) {
  for (long s : {408, 429, 500, 502, 503, 504})
    EXPECT_TRUE(internal::IsRetryableHttpStatus(s)) << s;
  for (long s : {200, 400, 401, 403, 404, 409, 501})
    EXPECT_FALSE(internal::IsRetryableHttpStatus(s)) << s;
}

TEST(RetryTest, BackoffGrowsCapsJittersAndHonoursRetryAfter) {
  RetryPolicy p;
  p.initial_backoff = absl::Seconds(1);
  p.max_backoff = absl::Seconds(10);
  p.multiplier = 2;
  p.max_jitter = absl::Seconds(1);
  EXPECT_EQ(internal::BackoffDelay(p, 1, std::nullopt, 0), absl::Seconds(1));
  EXPECT_EQ(internal::BackoffDelay(p, 2, std::nullopt, 0), absl::Seconds(2));
  EXPECT_EQ(internal::BackoffDelay(p, 3, std::nullopt, 0.5), absl::Milliseconds(4500));
  EXPECT_EQ(internal::BackoffDelay(p, 30, std::nullopt, 0), absl::Seconds(10));
  EXPECT_EQ(internal::BackoffDelay(p, 1, absl::Seconds(7), 0), absl::Seconds(7));
  EXPECT_EQ(internal::BackoffDelay(p, 1, absl::Seconds(700), 0), absl::Seconds(10));
  EXPECT_EQ(internal::BackoffDelay(p, 4, absl::Seconds(1), 0), absl::Seconds(8));
}

TEST(RedactTest, RemovesUserinfo) {
  EXPECT_EQ(internal::RedactUri("https://bob:s3cret@mlflow.example:5000/prefix"),
            "https://mlflow.example:5000/prefix");
  EXPECT_EQ(internal::RedactUri("http://127.0.0.1:5000"), "http://127.0.0.1:5000");
  EXPECT_EQ(internal::RedactUri("http://a@b/c@d"), "http://b/c@d");
}

TEST(ValidateTest, KeysAndArtifactPaths) {
  EXPECT_TRUE(ValidateKey("train/loss").ok());
  EXPECT_TRUE(ValidateKey("a-b_c.d e:f").ok());
  EXPECT_FALSE(ValidateKey("").ok());
  EXPECT_FALSE(ValidateKey("../x").ok());
  EXPECT_FALSE(ValidateKey("/x").ok());
  EXPECT_FALSE(ValidateKey("a//b").ok());
  EXPECT_FALSE(ValidateKey("a$b").ok());
  EXPECT_FALSE(ValidateKey(std::string(251, 'k')).ok());
  EXPECT_TRUE(ValidateArtifactPath("logs/worker-0.log").ok());
  EXPECT_FALSE(ValidateArtifactPath("../etc/passwd").ok());
  EXPECT_FALSE(ValidateArtifactPath("/abs").ok());
}

std::vector<nlohmann::json> Parse(const std::vector<std::string>& bodies) {
  std::vector<nlohmann::json> out;
  for (const auto& b : bodies) out.push_back(nlohmann::json::parse(b));
  return out;
}

TEST(SplitLogBatchTest, RespectsEveryLimit) {
  std::vector<Metric> metrics;
  for (int i = 0; i < 2500; ++i) metrics.push_back({"m", static_cast<double>(i), 1000 + i, i});
  std::vector<Param> params;
  for (int i = 0; i < 150; ++i) params.push_back({"p" + std::to_string(i), "v"});
  std::vector<Tag> tags;
  for (int i = 0; i < 120; ++i) tags.push_back({"t" + std::to_string(i), "v"});
  auto bodies = internal::SplitLogBatch("run1", metrics, params, tags);
  ASSERT_TRUE(bodies.ok()) << bodies.status();
  size_t m = 0, p = 0, t = 0;
  for (const auto& j : Parse(*bodies)) {
    EXPECT_EQ(j["run_id"], "run1");
    EXPECT_LE(j["metrics"].size(), 1000u);
    EXPECT_LE(j["params"].size(), 100u);
    EXPECT_LE(j["tags"].size(), 100u);
    EXPECT_LE(j["metrics"].size() + j["params"].size() + j["tags"].size(), 1000u);
    m += j["metrics"].size();
    p += j["params"].size();
    t += j["tags"].size();
  }
  EXPECT_EQ(m, 2500u);
  EXPECT_EQ(p, 150u);
  EXPECT_EQ(t, 120u);
  EXPECT_GE(bodies->size(), 3u);
}

TEST(SplitLogBatchTest, SplitsByBytes) {
  std::vector<Tag> tags;
  for (int i = 0; i < 90; ++i) tags.push_back({"t" + std::to_string(i), std::string(8000, 'x')});
  std::vector<Param> params;
  for (int i = 0; i < 90; ++i) params.push_back({"p" + std::to_string(i), std::string(6000, 'y')});
  auto bodies = internal::SplitLogBatch("r", {}, params, tags);
  ASSERT_TRUE(bodies.ok());
  EXPECT_GE(bodies->size(), 2u);
  for (const auto& b : *bodies) EXPECT_LE(b.size(), kMaxBatchJsonBytes);
}

TEST(SplitLogBatchTest, ParamsWriteOnceWithinOneCall) {
  auto same = internal::SplitLogBatch("r", {}, {{"lr", "0.1"}, {"lr", "0.1"}}, {});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(Parse(*same)[0]["params"].size(), 1u);
  auto different = internal::SplitLogBatch("r", {}, {{"lr", "0.1"}, {"lr", "0.2"}}, {});
  EXPECT_TRUE(absl::IsInvalidArgument(different.status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(internal::SplitLogBatch("r", {{"bad$", 1, 0, 0}}, {}, {}).status()));
}

TEST(SplitLogBatchTest, NonFiniteValuesAsMlflowSpellsThem) {
  auto bodies = internal::SplitLogBatch(
      "r",
      {{"a", std::nan(""), 0, 0}, {"b", INFINITY, 0, 0}, {"c", -INFINITY, 0, 0}, {"d", 1.5, 7, 3}},
      {}, {});
  ASSERT_TRUE(bodies.ok());
  auto j = Parse(*bodies)[0]["metrics"];
  EXPECT_EQ(j[0]["value"], "NaN");
  EXPECT_EQ(j[1]["value"], "Infinity");
  EXPECT_EQ(j[2]["value"], "-Infinity");
  EXPECT_EQ(j[3]["value"], 1.5);
  EXPECT_EQ(j[3]["timestamp"], 7);
  EXPECT_EQ(j[3]["step"], 3);
}

TEST(OptionsTest, FromEnvReadsTheStandardVariables) {
  std::map<std::string, std::string> env = {
      {"MLFLOW_TRACKING_URI", "https://mlflow.example"},
      {"MLFLOW_TRACKING_USERNAME", "bob"},
      {"MLFLOW_TRACKING_PASSWORD", "s3cret"},
      {"MLFLOW_TRACKING_TOKEN", "tok"},
      {"MLFLOW_TRACKING_INSECURE_TLS", "true"},
      {"MLFLOW_TRACKING_CLIENT_CERT_PATH", "/c.pem"},
      {"MLFLOW_HTTP_REQUEST_TIMEOUT", "30"},
      {"MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2"},
  };
  auto get = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto o = RestTrackingOptions::FromEnv(get);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->tracking_uri, "https://mlflow.example");
  EXPECT_EQ(o->username, "bob");
  EXPECT_EQ(o->password, "s3cret");
  EXPECT_EQ(o->token, "tok");
  EXPECT_TRUE(o->insecure_tls);
  EXPECT_EQ(o->client_cert_path, "/c.pem");
  EXPECT_EQ(o->request_timeout, absl::Seconds(30));
  EXPECT_EQ(o->retry.max_attempts, 3);

  env["MLFLOW_TRACKING_INSECURE_TLS"] = "maybe";
  auto bad = RestTrackingOptions::FromEnv(get);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_EQ(bad.status().message().find("s3cret"), std::string::npos);
  env.erase("MLFLOW_TRACKING_URI");
  EXPECT_TRUE(absl::IsNotFound(RestTrackingOptions::FromEnv(get).status()));
}

TEST(CreateTest, RefusesNonHttpUrisWithoutEchoingSecrets) {
  RestTrackingOptions o;
  o.tracking_uri = "file://bob:s3cret@/tmp/mlruns";
  auto c = RestTrackingClient::Create(o);
  ASSERT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_EQ(c.status().message().find("s3cret"), std::string::npos) << c.status();
}

TEST(CreateTest, ConnectionRefusedIsUnavailableAfterRetries) {
  RestTrackingOptions o;
  o.tracking_uri = "http://bob:s3cret@127.0.0.1:1";
  o.retry.max_attempts = 3;
  o.retry.initial_backoff = absl::Milliseconds(1);
  o.retry.max_jitter = absl::Milliseconds(1);
  auto c = RestTrackingClient::Create(o);
  ASSERT_TRUE(c.ok());
  absl::Status s = (*c)->LogMetric("r", {"m", 1, 0, 0});
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(s.ToString().find("s3cret"), std::string::npos) << s;
  EXPECT_EQ((*c)->requests_sent(), 3);
  EXPECT_EQ((*c)->retries(), 2);
  EXPECT_EQ((*c)->redacted_uri(), "http://127.0.0.1:1");
}

}  // namespace
}  // namespace coach::mlflow
