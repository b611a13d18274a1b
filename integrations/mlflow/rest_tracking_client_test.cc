// The REST client and MetricLogger against a real MLflow server: an outage mid-logging, basic auth,
// and 429/500 injected by a fault proxy in front of the server.
#include "integrations/mlflow/rest_tracking_client.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/metric_logger.h"
#include "integrations/mlflow/testing/mlflow_server.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow {
namespace {

using testing::MlflowServer;

std::unique_ptr<RestTrackingClient> Client(const std::string& uri, int attempts = 7) {
  RestTrackingOptions o;
  o.tracking_uri = uri;
  o.retry.max_attempts = attempts;
  o.retry.initial_backoff = absl::Milliseconds(20);
  o.retry.max_jitter = absl::Milliseconds(20);
  o.request_timeout = absl::Seconds(10);
  auto c = RestTrackingClient::Create(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

RunInfo NewRun(TrackingClient& client, const std::string& experiment) {
  auto exp = client.GetOrCreateExperiment(experiment);
  EXPECT_TRUE(exp.ok()) << exp.status();
  CreateRunRequest req;
  req.experiment_id = exp.value_or("");
  auto run = client.CreateRun(req);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.value_or(RunInfo{});
}

TEST(RestTrackingClientTest, ServerStoppedMidLoggingLosesNoPointWithinTheBound) {
  MlflowServer::Options options;
  options.workers = 1;
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start(options));
  auto client = Client(server->uri(), /*attempts=*/1);  // the logger retries by itself
  RunInfo run = NewRun(*client, "outage");
  MetricLoggerOptions lo;
  lo.max_batch_delay = absl::Milliseconds(20);
  lo.initial_backoff = absl::Milliseconds(50);
  lo.max_backoff = absl::Milliseconds(500);
  lo.max_buffered_points = 100000;
  auto logger = MetricLogger::Create(client.get(), run.run_id, lo);
  ASSERT_TRUE(logger.ok());

  std::atomic<bool> stop{false};
  std::atomic<int64_t> logged{0};
  std::thread training([&] {
    for (int64_t step = 0; !stop.load(); ++step) {
      ASSERT_TRUE((*logger)->Log("train/loss", 1.0 / (step + 1), step));
      logged = step + 1;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(server->Stop().ok());
  int64_t at_stop = logged.load();
  absl::SleepFor(absl::Seconds(3));  // down for a few seconds (plus the restart time)
  ASSERT_TRUE(server->Restart().ok());
  absl::SleepFor(absl::Seconds(1));
  stop = true;
  training.join();
  const int64_t total = logged.load();
  ASSERT_TRUE((*logger)->Flush(absl::Seconds(60)).ok()) << (*logger)->stats().buffered;
  MetricLoggerStats s = (*logger)->Shutdown(absl::Seconds(5));
  EXPECT_GT(s.failed_attempts, 0);
  EXPECT_EQ(s.undelivered(), 0);
  EXPECT_EQ(s.accepted, total);
  EXPECT_GT(total, at_stop + 100);  // points were logged while the server was down

  auto out = MlflowServer::RunPython("read_run.py", {run.run_id, "--metric", "train/loss"},
                                     {{"MLFLOW_TRACKING_URI", server->uri()}});
  ASSERT_TRUE(out.ok()) << out.status();
  nlohmann::json py = nlohmann::json::parse(*out);
  EXPECT_EQ(py["metrics"]["train/loss"]["distinct_steps"], total);
  EXPECT_GE(py["metrics"]["train/loss"]["count"], total);  // a batch may land twice
  EXPECT_EQ(py["metrics"]["train/loss"]["min_step"], 0);
  EXPECT_EQ(py["metrics"]["train/loss"]["max_step"], total - 1);
}

TEST(RestTrackingClientTest, BasicAuthWithRightAndWrongCredentials) {
  MlflowServer::Options options;
  options.basic_auth = true;
  options.workers = 1;
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start(options));
  RestTrackingOptions o;
  o.tracking_uri = server->uri();
  o.retry.max_attempts = 2;
  o.retry.initial_backoff = absl::Milliseconds(10);
  o.username = "admin";
  o.password = "password1234";
  auto good = RestTrackingClient::Create(o);
  ASSERT_TRUE(good.ok());
  RunInfo run = NewRun(**good, "auth");
  EXPECT_TRUE((*good)->LogParam(run.run_id, "p", "1").ok());

  o.password = "wrong-s3cret";
  auto bad = RestTrackingClient::Create(o);
  ASSERT_TRUE(bad.ok());
  absl::Status s = (*bad)->GetOrCreateExperiment("auth").status();
  EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
  EXPECT_EQ(s.ToString().find("wrong-s3cret"), std::string::npos) << s;
  EXPECT_EQ((*bad)->retries(), 0);  // 401 is not retried

  RestTrackingOptions anonymous;
  anonymous.tracking_uri = server->uri();
  auto none = RestTrackingClient::Create(anonymous);
  EXPECT_TRUE(absl::IsUnauthenticated((*none)->GetRun(run.run_id).status()));

  // Credentials from the standard variables.
  std::map<std::string, std::string> env = {{"MLFLOW_TRACKING_URI", server->uri()},
                                            {"MLFLOW_TRACKING_USERNAME", "admin"},
                                            {"MLFLOW_TRACKING_PASSWORD", "password1234"}};
  auto from_env = RestTrackingOptions::FromEnv([&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  ASSERT_TRUE(from_env.ok());
  auto env_client = RestTrackingClient::Create(*from_env);
  EXPECT_TRUE((*env_client)->GetRun(run.run_id).ok());
}

// Forwards to the real server; the first `faults` requests get `status` with Retry-After instead.
class FaultProxy {
 public:
  FaultProxy(const std::string& upstream_uri) {
    std::string hostport = upstream_uri.substr(upstream_uri.find("://") + 3);
    upstream_host_ = hostport.substr(0, hostport.find(':'));
    upstream_port_ = std::stoi(hostport.substr(hostport.find(':') + 1));
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      Handle(req, res);
    };
    server_.Get(".*", handler);
    server_.Post(".*", handler);
    server_.Put(".*", handler);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FaultProxy() {
    server_.stop();
    thread_.join();
  }
  void Inject(int status, int times, const std::string& retry_after) {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < times; ++i) faults_.push_back({status, retry_after});
  }
  std::string uri() const { return absl::StrCat("http://127.0.0.1:", port_); }
  int requests() const { return requests_.load(); }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!faults_.empty()) {
        auto [status, retry_after] = faults_.front();
        faults_.erase(faults_.begin());
        res.status = status;
        if (!retry_after.empty()) res.set_header("Retry-After", retry_after);
        res.set_content(status == 429
                            ? R"({"error_code":"REQUEST_LIMIT_EXCEEDED","message":"slow down"})"
                            : R"({"error_code":"INTERNAL_ERROR","message":"injected"})",
                        "application/json");
        return;
      }
    }
    httplib::Client upstream(upstream_host_, upstream_port_);
    httplib::Headers headers;
    httplib::Result r = req.method == "GET" ? upstream.Get(req.target.c_str())
                        : req.method == "PUT"
                            ? upstream.Put(req.target.c_str(), req.body,
                                           req.get_header_value("Content-Type").c_str())
                            : upstream.Post(req.target.c_str(), req.body,
                                            req.get_header_value("Content-Type").c_str());
    if (!r) {
      res.status = 502;
      return;
    }
    res.status = r->status;
    res.set_content(r->body, r->get_header_value("Content-Type").c_str());
  }

  httplib::Server server_;
  std::thread thread_;
  std::string upstream_host_;
  int upstream_port_ = 0;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::vector<std::pair<int, std::string>> faults_;
};

// A run's artifacts are the training code's to write: an artifact past the bound is refused, not
// buffered whole.
TEST(RestTrackingClientTest, AnswerLongerThanTheBoundIsRefused) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  RestTrackingOptions o;
  o.tracking_uri = server->uri();
  o.max_answer_bytes = 64 << 10;
  auto bounded = RestTrackingClient::Create(o);
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  RunInfo run = NewRun(**bounded, "bounded");
  ASSERT_TRUE((*bounded)->UploadArtifact(run.run_id, "big.log", std::string(1 << 20, 'x')).ok());
  ASSERT_TRUE((*bounded)->UploadArtifact(run.run_id, "small.log", "fits\n").ok());
  auto big = (*bounded)->DownloadArtifact(run.run_id, "big.log");
  EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  auto small = (*bounded)->DownloadArtifact(run.run_id, "small.log");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(*small, "fits\n");
}

TEST(RestTrackingClientTest, RetriesInjected429And500HonouringRetryAfter) {
  MlflowServer::Options options;
  options.workers = 1;
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start(options));
  FaultProxy proxy(server->uri());
  auto client = Client(proxy.uri());
  RunInfo run = NewRun(*client, "faults");
  const int before = proxy.requests();
  const int64_t retries_before = client->retries();

  proxy.Inject(429, 2, "1");
  proxy.Inject(500, 2, "");
  auto start = absl::Now();
  std::vector<Metric> metrics;
  for (int i = 0; i < 10; ++i)
    metrics.push_back({"m", static_cast<double>(i), 1700000000000 + i, i});
  absl::Status s = client->LogBatch(run.run_id, metrics, {}, {});
  absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(proxy.requests() - before, 5);  // 4 faults, then through
  EXPECT_EQ(client->retries() - retries_before, 4);
  EXPECT_GE(took, absl::Seconds(2));  // two Retry-After: 1
  auto history = client->GetMetricHistory(run.run_id, "m");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), 10u);

  // More faults than attempts: Unavailable, after exactly max_attempts requests.
  auto few = Client(proxy.uri(), /*attempts=*/3);
  proxy.Inject(503, 5, "");
  const int mark = proxy.requests();
  absl::Status gave_up = few->LogMetric(run.run_id, {"m", 1, 1, 100});
  EXPECT_TRUE(absl::IsUnavailable(gave_up)) << gave_up;
  EXPECT_EQ(proxy.requests() - mark, 3);

  // Write-once conflicts are not retried.
  ASSERT_TRUE(client->LogParam(run.run_id, "lr", "0.1").ok());
  const int64_t r0 = client->retries();
  EXPECT_TRUE(absl::IsInvalidArgument(client->LogParam(run.run_id, "lr", "0.2")));
  EXPECT_EQ(client->retries(), r0);
}

}  // namespace
}  // namespace coach::mlflow
