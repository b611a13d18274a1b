#include "operator/cmd/mlflow_client.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace coach::cmd {
namespace {

// A server a job named gets none of what identifies the operator; TLS settings still apply.
TEST(MlflowClientTest, OnlyTheOperatorsServerGetsItsCredentials) {
  ::setenv("MLFLOW_TRACKING_USERNAME", "operator", 1);
  ::setenv("MLFLOW_TRACKING_PASSWORD", "s3cret", 1);
  ::setenv("MLFLOW_TRACKING_TOKEN", "tok", 1);
  ::setenv("MLFLOW_TRACKING_CLIENT_CERT_PATH", "/etc/coach/client.pem", 1);
  ::setenv("MLFLOW_TRACKING_SERVER_CERT_PATH", "/etc/coach/ca.pem", 1);
  absl::StatusOr<coach::mlflow::RestTrackingOptions> own = MlflowOptionsFor("https://ml:5000");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->username, "operator");
  EXPECT_EQ(own->password, "s3cret");
  EXPECT_EQ(own->token, "tok");
  EXPECT_EQ(own->client_cert_path, "/etc/coach/client.pem");
  absl::StatusOr<coach::mlflow::RestTrackingOptions> named =
      MlflowOptionsFor("https://job-named:5000", /*credentials=*/false);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->tracking_uri, "https://job-named:5000");
  EXPECT_EQ(named->username, "");
  EXPECT_EQ(named->password, "");
  EXPECT_EQ(named->token, "");
  EXPECT_EQ(named->client_cert_path, "");
  EXPECT_EQ(named->server_cert_path, "/etc/coach/ca.pem");
}

}  // namespace
}  // namespace coach::cmd
