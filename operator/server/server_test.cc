// The real gRPC server and HTTP endpoint over JobService (fake backend, sqlite store),
// driven through the SDK's TrainingClient.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "operator/core/testing/core_fixture.h"
#include "operator/server/grpc_server.h"
#include "operator/server/http_server.h"
#include "operator/server/training_service_impl.h"
#include "sdk/cpp/training_client.h"

namespace coach::server {
namespace {

using core::testing::CoreEnv;
using core::testing::PyTorchManifest;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct ServerEnv {
  explicit ServerEnv(const std::string& token = "", GrpcServerOptions options = {})
      : ServerEnv(std::make_unique<SharedTokenAuth>(TokenAuth(token)), std::move(options)) {}
  ServerEnv(std::unique_ptr<ApiAuth> auth, GrpcServerOptions options) {
    env.StartController(2);
    service = std::make_unique<TrainingServiceImpl>(env.service.get(), std::move(auth));
    options.listen = "127.0.0.1:0";
    auto started = GrpcServer::Start(service.get(), options);
    EXPECT_TRUE(started.ok()) << started.status();
    server = std::move(started).value();
    auto http_started = HttpServer::Start(
        "127.0.0.1:0", [this] { return env.controller != nullptr && env.controller->running(); },
        &env.registry);
    EXPECT_TRUE(http_started.ok()) << http_started.status();
    http = std::move(http_started).value();
  }
  ~ServerEnv() {
    http->Stop();
    env.watchers.Shutdown();
    server->Shutdown();
  }

  std::unique_ptr<sdk::TrainingClient> Client(sdk::ConnectionOptions options = {}) {
    options.server = absl::StrCat("127.0.0.1:", server->port());
    options.use_environment = false;
    options.call_timeout = absl::Seconds(10);
    auto client = sdk::TrainingClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return std::move(client).value();
  }

  CoreEnv env;
  std::unique_ptr<TrainingServiceImpl> service;
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<HttpServer> http;
};

TEST(ServerTest, LifecycleAndErrorCodesThroughTheSdk) {
  ServerEnv s;
  auto client = s.Client();
  auto created = client->CreateJobFromManifest(PyTorchManifest("sdk"), "team-a");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata().namespace_(), "team-a");
  EXPECT_EQ(client->CreateJobFromManifest(PyTorchManifest("sdk"), "team-a").status().code(),
            absl::StatusCode::kAlreadyExists);
  auto bad = client->CreateJobFromManifest(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: x\nspec:\n"
      "  pytorchReplicaSpecs:\n    Worker:\n      replicas: -1\n");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(bad.status().message()).find("spec.pytorchReplicaSpecs.Worker.replicas"),
            std::string::npos)
      << bad.status();
  EXPECT_EQ(client->GetJob("team-a", "nope").status().code(), absl::StatusCode::kNotFound);
  sdk::ListOptions list;
  list.label_selector = "a in (b)";
  EXPECT_EQ(client->ListJobs(list).status().code(), absl::StatusCode::kInvalidArgument);
  auto dry = client->CreateJobFromManifest(PyTorchManifest("dry"), "", /*dry_run=*/true);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(client->GetJob("default", "dry").status().code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return s.env.backend.PodNames("team-a", "sdk").size() == 2; }));
  s.env.backend.SetAllPods("team-a", "sdk", model::PodPhase::kRunning);
  auto running =
      client->WaitForJobConditions("team-a", "sdk", {"Running"}, {absl::Seconds(10), nullptr});
  ASSERT_TRUE(running.ok()) << running.status();
  auto described = client->DescribeJob("team-a", "sdk");
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->replicas_size(), 2);
  EXPECT_GT(described->events_size(), 0);

  ASSERT_TRUE(client->SuspendJob("team-a", "sdk").ok());
  ASSERT_TRUE(client->ResumeJob("team-a", "sdk").ok());
  s.env.backend.SetLog("sdk-master-0", "epoch 1\n");
  std::string logs;
  sdk::LogOptions log_options;
  log_options.namespace_ = "team-a";
  log_options.name = "sdk";
  log_options.replica = "sdk-master-0";
  ASSERT_TRUE(client
                  ->GetJobLogs(log_options,
                               [&](const api::v1::LogChunk& c) {
                                 logs += c.data();
                                 return true;
                               })
                  .ok());
  EXPECT_EQ(logs, "epoch 1\n");

  auto all = client->ListAllJobs();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
  ASSERT_TRUE(client->DeleteJob("team-a", "sdk").ok());
  EXPECT_EQ(client->DeleteJob("team-a", "sdk").code(), absl::StatusCode::kNotFound);
}

// Lets the caller with token "t" create anything and get/list/watch TFJobs only.
class TfReaderAuth : public ApiAuth {
 public:
  absl::StatusOr<UserInfo> Authenticate(const std::string* header) override {
    if (header == nullptr || *header != "Bearer t") return absl::UnauthenticatedError("who?");
    UserInfo u;
    u.username = "tf-reader";
    return u;
  }
  absl::Status Authorize(const UserInfo& user, const ResourceAttributes& a) override {
    if (a.verb == "create" || a.resource == "tfjobs") return absl::OkStatus();
    return absl::PermissionDeniedError(ForbiddenMessage(user.username, a));
  }
  bool Authorizes() const override { return true; }
  std::string Mode() const override { return "test"; }
};

constexpr char kTfManifest[] =
    "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: tf1\nspec:\n"
    "  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      template:\n        spec:\n"
    "          containers:\n          - name: tensorflow\n            image: busybox\n"
    "            command: [\"true\"]\n";

// The service asks ApiAuth before every call and answers with its codes; ListJobs and
// WatchJobs leave out the kinds the caller may not see.
TEST(ServerTest, AuthorizationCodesAndKindFiltering) {
  ServerEnv s(std::make_unique<TfReaderAuth>(), {});
  sdk::ConnectionOptions with_token;
  with_token.token = "t";
  auto client = s.Client(with_token);
  EXPECT_EQ(s.Client()->ListAllJobs().status().code(), absl::StatusCode::kUnauthenticated);
  ASSERT_TRUE(client->CreateJobFromManifest(PyTorchManifest("pt1")).ok());
  ASSERT_TRUE(client->CreateJobFromManifest(kTfManifest).ok());

  EXPECT_TRUE(client->GetJob("default", "tf1").ok());
  absl::StatusOr<api::v1::TrainingJob> pt = client->GetJob("default", "pt1");
  EXPECT_EQ(pt.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(pt.status().message()).find("cannot get resource \"pytorchjobs\""),
            std::string::npos)
      << pt.status();
  EXPECT_EQ(client->DeleteJob("default", "pt1").code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(s.env.service->Get("default", "pt1").ok());  // still there

  auto listed = client->ListAllJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].metadata().name(), "tf1");

  // Only the kind the caller may watch; tf1 may show more than once (its status is
  // reconciled while the watch runs).
  std::set<std::string> watched;
  sdk::WatchOptions options;
  options.timeout = absl::Seconds(2);
  absl::Status status = client->Watch(options, [&](const api::v1::JobEvent& ev) {
    watched.insert(ev.job().metadata().name());
    return true;
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(watched, std::set<std::string>{"tf1"});
}

TEST(ServerTest, WatchStreamsAndHonoursCancel) {
  ServerEnv s;
  auto client = s.Client();
  ASSERT_TRUE(client->CreateJobFromManifest(PyTorchManifest("w1")).ok());
  std::vector<api::v1::JobEvent::Type> types;
  sdk::CancelHandle cancel;
  std::thread deleter([&] {
    ASSERT_TRUE(
        CoreEnv::WaitFor([&] { return s.env.backend.PodNames("default", "w1").size() == 2; }));
    ASSERT_TRUE(client->DeleteJob("default", "w1").ok());
  });
  sdk::WatchOptions options;
  options.timeout = absl::Seconds(20);
  absl::Status status = client->Watch(
      options,
      [&](const api::v1::JobEvent& ev) {
        types.push_back(ev.type());
        if (ev.type() == api::v1::JobEvent::DELETED) cancel.Cancel();
        return true;
      },
      &cancel);
  deleter.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  ASSERT_GE(types.size(), 2u);
  EXPECT_EQ(types.front(), api::v1::JobEvent::ADDED);
  EXPECT_EQ(types.back(), api::v1::JobEvent::DELETED);
  // The server noticed the cancellation and let go of the subscription.
  EXPECT_TRUE(CoreEnv::WaitFor([&] { return s.env.watchers.size() == 0; }));
}

TEST(ServerTest, TokenRequiredWhenConfigured) {
  ServerEnv s("s3cret-token");
  sdk::ConnectionOptions none;
  EXPECT_EQ(s.Client(none)->GetJob("default", "x").status().code(),
            absl::StatusCode::kUnauthenticated);
  sdk::ConnectionOptions wrong;
  wrong.token = "guess";
  auto wrong_status = s.Client(wrong)->ListJobs({}).status();
  EXPECT_EQ(wrong_status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(std::string(wrong_status.message()).find("s3cret-token"), std::string::npos);
  sdk::WatchOptions watch;
  watch.timeout = absl::Seconds(5);
  EXPECT_EQ(s.Client(wrong)->Watch(watch, [](const api::v1::JobEvent&) { return true; }).code(),
            absl::StatusCode::kUnauthenticated);
  sdk::ConnectionOptions right;
  right.token = "s3cret-token";
  EXPECT_EQ(s.Client(right)->GetJob("default", "x").status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerTest, TlsWithSelfSignedCertificate) {
  const std::string dir = core::testing::MakeTempDir();
  const std::string cmd = absl::StrCat(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ",
      dir, "/key.pem -out ", dir, "/cert.pem 2>/dev/null");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  GrpcServerOptions tls;
  tls.tls_cert_pem = ReadFile(dir + "/cert.pem");
  tls.tls_key_pem = ReadFile(dir + "/key.pem");
  ServerEnv s("", tls);
  EXPECT_TRUE(s.server->tls());
  sdk::ConnectionOptions secure;
  secure.tls_ca = dir + "/cert.pem";
  secure.tls_server_name = "localhost";
  EXPECT_EQ(s.Client(secure)->GetJob("default", "x").status().code(), absl::StatusCode::kNotFound);
  // A plaintext client cannot talk to it.
  sdk::ConnectionOptions plain;
  plain.call_timeout = absl::Seconds(2);
  EXPECT_EQ(s.Client(plain)->GetJob("default", "x").status().code(),
            absl::StatusCode::kUnavailable);

  GrpcServerOptions half;
  half.tls_cert_pem = tls.tls_cert_pem;
  EXPECT_EQ(GrpcServer::Start(s.service.get(), half).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Another pair's key: said as such, not as a port that cannot be bound.
  ASSERT_EQ(std::system(absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
                                     "-subj /CN=other -keyout ",
                                     dir, "/other.key -out ", dir, "/other.pem 2>/dev/null")
                            .c_str()),
            0);
  GrpcServerOptions mismatched = tls;
  mismatched.listen = "127.0.0.1:0";
  mismatched.tls_key_pem = ReadFile(dir + "/other.key");
  absl::StatusOr<std::unique_ptr<GrpcServer>> refused =
      GrpcServer::Start(s.service.get(), mismatched);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              ::testing::HasSubstr("not the private key of the certificate"));
  GrpcServerOptions garbage = tls;
  garbage.listen = "127.0.0.1:0";
  garbage.tls_cert_pem = "not a certificate";
  EXPECT_THAT(GrpcServer::Start(s.service.get(), garbage).status().message(),
              ::testing::HasSubstr("certificate: no PEM certificate"));
  garbage.tls_cert_pem = tls.tls_cert_pem;
  garbage.tls_client_ca_pem = "-----BEGIN CERTIFICATE-----\nbroken\n";
  EXPECT_THAT(GrpcServer::Start(s.service.get(), garbage).status().message(),
              ::testing::HasSubstr("client CA: no PEM certificate"));
}

TEST(ServerTest, MutualTlsRequiresAClientCertificate) {
  const std::string dir = core::testing::MakeTempDir();
  const std::string cmd = absl::StrCat(
      "cd ", dir, " && ",
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=coach-ca -keyout ca.key "
      "-out ca.pem 2>/dev/null && ",
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout server.key -out server.pem "
      "2>/dev/null && ",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key -out client.csr "
      "2>/dev/null && ",
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
      "-out client.pem 2>/dev/null");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  GrpcServerOptions tls;
  tls.tls_cert_pem = ReadFile(dir + "/server.pem");
  tls.tls_key_pem = ReadFile(dir + "/server.key");
  tls.tls_client_ca_pem = ReadFile(dir + "/ca.pem");
  ServerEnv s("", tls);
  sdk::ConnectionOptions with_cert;
  with_cert.tls_ca = dir + "/server.pem";
  with_cert.tls_server_name = "localhost";
  with_cert.tls_cert = dir + "/client.pem";
  with_cert.tls_key = dir + "/client.key";
  EXPECT_EQ(s.Client(with_cert)->GetJob("default", "x").status().code(),
            absl::StatusCode::kNotFound);
  sdk::ConnectionOptions without_cert;
  without_cert.tls_ca = dir + "/server.pem";
  without_cert.tls_server_name = "localhost";
  without_cert.call_timeout = absl::Seconds(2);
  EXPECT_EQ(s.Client(without_cert)->GetJob("default", "x").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(ServerTest, HealthReadyAndMetricsOverHttp) {
  ServerEnv s;
  auto client = s.Client();
  ASSERT_TRUE(client->CreateJobFromManifest(PyTorchManifest("m")).ok());
  httplib::Client http("127.0.0.1", s.http->port());
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = http.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("training_operator_jobs_created_total{job_namespace=\"default\","
                               "framework=\"pytorch\"} 1"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("coach_workqueue_depth"), std::string::npos);
  s.env.StopController();
  auto not_ready = http.Get("/readyz");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
}

}  // namespace
}  // namespace coach::server
