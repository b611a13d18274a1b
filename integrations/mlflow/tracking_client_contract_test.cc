// One suite, two implementations: the in-memory fake and the REST client against a real MLflow
// server (tools/mlflow_env.sh; skipped without MLflow unless CI=true). For the real server the
// Python MLflow client reads back what coach wrote (testdata/read_run.py).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/rest_tracking_client.h"
#include "integrations/mlflow/testing/fake_tracking_client.h"
#include "integrations/mlflow/testing/mlflow_server.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow {
namespace {

using testing::FakeTrackingClient;
using testing::MlflowServer;

class ContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    if (GetParam() == "fake") {
      client_ = std::make_unique<FakeTrackingClient>();
      return;
    }
    if (server_ == nullptr && server_status_.ok()) {
      auto s = MlflowServer::Start();
      if (s.ok())
        server_ = std::move(*s);
      else
        server_status_ = s.status();
    }
    if (!server_status_.ok()) {
      if (absl::IsNotFound(server_status_) && !testing::InCi()) GTEST_SKIP() << server_status_;
      FAIL() << server_status_;
    }
    RestTrackingOptions o;
    o.tracking_uri = server_->uri();
    o.retry.initial_backoff = absl::Milliseconds(50);
    o.retry.max_jitter = absl::Milliseconds(50);
    auto c = RestTrackingClient::Create(o);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  bool real() const { return GetParam() == "real"; }

  // The Python MLflow client's view of a run (real server only).
  nlohmann::json ReadBack(const std::string& run_id, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {run_id};
    args.insert(args.end(), extra.begin(), extra.end());
    auto out =
        MlflowServer::RunPython("read_run.py", args, {{"MLFLOW_TRACKING_URI", server_->uri()}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? nlohmann::json::parse(*out) : nlohmann::json::object();
  }

  static std::string Unique(const std::string& prefix) {
    static std::mt19937_64 rng(std::random_device{}());
    return absl::StrCat(prefix, "-", rng() % 1000000000);
  }

  RunInfo NewRun(std::vector<Tag> tags = {}) {
    auto exp = client_->GetOrCreateExperiment(Unique("exp"));
    EXPECT_TRUE(exp.ok()) << exp.status();
    CreateRunRequest req;
    req.experiment_id = exp.value_or("");
    req.run_name = "ns/job";
    req.start_time_ms = 1700000000000;
    req.tags = std::move(tags);
    auto run = client_->CreateRun(req);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(RunInfo{});
  }

  static std::unique_ptr<MlflowServer> server_;
  static absl::Status server_status_;
  std::unique_ptr<TrackingClient> client_;
};

std::unique_ptr<MlflowServer> ContractTest::server_;
absl::Status ContractTest::server_status_;

TEST_P(ContractTest, GetOrCreateExperimentIsSafeWhenTwoRace) {
  for (int round = 0; round < 3; ++round) {
    const std::string name = Unique("race");
    std::string ids[2];
    absl::Status statuses[2];
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) {
        }
        auto id = client_->GetOrCreateExperiment(name);
        statuses[t] = id.status();
        if (id.ok()) ids[t] = *id;
      });
    }
    go = true;
    for (auto& t : threads) t.join();
    ASSERT_TRUE(statuses[0].ok()) << statuses[0];
    ASSERT_TRUE(statuses[1].ok()) << statuses[1];
    EXPECT_EQ(ids[0], ids[1]);
    auto again = client_->GetOrCreateExperiment(name);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, ids[0]);
    auto e = client_->GetExperimentByName(name);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->experiment_id, ids[0]);
    EXPECT_EQ(e->lifecycle_stage, "active");
  }
  EXPECT_TRUE(absl::IsNotFound(client_->GetExperimentByName(Unique("absent")).status()));
}

TEST_P(ContractTest, RunLifecycleWithParamsTagsMetricsStatusAndEndTime) {
  RunInfo run = NewRun({{"coach.job_uid", "uid-1"}, {"coach.kind", "PyTorchJob"}});
  ASSERT_FALSE(run.run_id.empty());
  EXPECT_EQ(run.run_name, "ns/job");
  EXPECT_EQ(run.status, RunStatus::kRunning);
  EXPECT_EQ(run.start_time_ms, 1700000000000);
  ASSERT_TRUE(client_
                  ->LogBatch(run.run_id,
                             {{"loss", 0.5, 1700000000100, 1}, {"loss", 0.25, 1700000000200, 2}},
                             {{"workers", "3"}, {"lr", "0.01"}}, {{"coach.condition", "Running"}})
                  .ok());
  ASSERT_TRUE(client_->SetTag(run.run_id, "coach.condition", "Succeeded").ok());  // tags overwrite
  ASSERT_TRUE(client_->LogMetric(run.run_id, {"nan_metric", std::nan(""), 1700000000300, 0}).ok());
  auto ended = client_->TerminateRun(run.run_id, RunStatus::kFinished, 1700000009000);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->status, RunStatus::kFinished);
  EXPECT_TRUE(
      absl::IsInvalidArgument(client_->TerminateRun(run.run_id, RunStatus::kRunning, 1).status()));

  auto got = client_->GetRun(run.run_id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->info.status, RunStatus::kFinished);
  EXPECT_EQ(got->info.end_time_ms, 1700000009000);
  EXPECT_EQ(got->params["workers"], "3");
  EXPECT_EQ(got->params["lr"], "0.01");
  EXPECT_EQ(got->tags["coach.job_uid"], "uid-1");
  EXPECT_EQ(got->tags["coach.condition"], "Succeeded");
  EXPECT_EQ(got->tags["mlflow.runName"], "ns/job");
  auto history = client_->GetMetricHistory(run.run_id, "loss");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[1], (Metric{"loss", 0.25, 1700000000200, 2}));
  auto nan = client_->GetMetricHistory(run.run_id, "nan_metric");
  ASSERT_TRUE(nan.ok());
  ASSERT_EQ(nan->size(), 1u);
  EXPECT_TRUE(std::isnan((*nan)[0].value));

  // A restarted operator finds the job's run by its tag instead of creating a second one.
  absl::StatusOr<std::vector<std::string>> experiments = client_->ListExperimentIds(1000);
  ASSERT_TRUE(experiments.ok()) << experiments.status();
  EXPECT_NE(std::find(experiments->begin(), experiments->end(), run.experiment_id),
            experiments->end());
  auto found = client_->SearchRuns({{run.experiment_id}, "tags.`coach.job_uid` = 'uid-1'", 10});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].run_id, run.run_id);

  if (real()) {
    nlohmann::json py = ReadBack(run.run_id, {"--metric", "loss"});
    EXPECT_EQ(py["status"], "FINISHED");
    EXPECT_EQ(py["end_time"], 1700000009000);
    EXPECT_EQ(py["start_time"], 1700000000000);
    EXPECT_EQ(py["run_name"], "ns/job");
    EXPECT_EQ(py["params"]["workers"], "3");
    EXPECT_EQ(py["tags"]["coach.kind"], "PyTorchJob");
    EXPECT_EQ(py["tags"]["coach.condition"], "Succeeded");
    EXPECT_EQ(py["metrics"]["loss"]["count"], 2);
  }
}

TEST_P(ContractTest, LargeBatchesAreSplitAndLandCompletely) {
  RunInfo run = NewRun();
  std::vector<Metric> metrics;
  for (int i = 0; i < 2500; ++i)
    metrics.push_back({"train/loss", 1.0 / (i + 1), 1700000000000 + i, i});
  std::vector<Param> params;
  for (int i = 0; i < 150; ++i) params.push_back({absl::StrCat("p", i), absl::StrCat(i)});
  std::vector<Tag> tags;
  for (int i = 0; i < 120; ++i) tags.push_back({absl::StrCat("t", i), absl::StrCat(i)});
  ASSERT_TRUE(client_->LogBatch(run.run_id, metrics, params, tags).ok());
  auto history = client_->GetMetricHistory(run.run_id, "train/loss");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), 2500u);
  auto got = client_->GetRun(run.run_id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->params.size(), 150u);
  EXPECT_GE(got->tags.size(), 120u);
  if (real()) {
    nlohmann::json py = ReadBack(run.run_id, {"--metric", "train/loss"});
    EXPECT_EQ(py["metrics"]["train/loss"]["count"], 2500);
    EXPECT_EQ(py["metrics"]["train/loss"]["distinct_steps"], 2500);
    EXPECT_EQ(py["params"].size(), 150u);
  }
}

TEST_P(ContractTest, ParamsAreWriteOnce) {
  RunInfo run = NewRun();
  ASSERT_TRUE(client_->LogParam(run.run_id, "lr", "0.1").ok());
  EXPECT_TRUE(client_->LogParam(run.run_id, "lr", "0.1").ok());  // same value again: fine
  absl::Status changed = client_->LogParam(run.run_id, "lr", "0.2");
  EXPECT_TRUE(absl::IsInvalidArgument(changed)) << changed;
  EXPECT_TRUE(
      absl::IsInvalidArgument(client_->LogBatch(run.run_id, {}, {{"x", "1"}, {"x", "2"}}, {})));
  auto got = client_->GetRun(run.run_id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->params["lr"], "0.1");
  EXPECT_EQ(got->params.count("x"), 0u);
}

TEST_P(ContractTest, ArtifactsUploadAndReadBack) {
  RunInfo run = NewRun();
  const std::string log = "rank 0: epoch 1 loss 0.5\nrank 0: done\n";
  ASSERT_TRUE(client_->UploadArtifact(run.run_id, "logs/worker-0.log", log).ok());
  ASSERT_TRUE(client_->UploadArtifact(run.run_id, "summary.json", "{\"ok\":true}").ok());
  auto back = client_->DownloadArtifact(run.run_id, "logs/worker-0.log");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, log);
  EXPECT_TRUE(absl::IsNotFound(client_->DownloadArtifact(run.run_id, "logs/absent.log").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(client_->UploadArtifact(run.run_id, "../escape", "x")));
  if (real()) {
    nlohmann::json py =
        ReadBack(run.run_id, {"--artifact", "logs/worker-0.log", "--artifact", "summary.json"});
    EXPECT_EQ(py["artifacts"]["logs/worker-0.log"], log);
    EXPECT_EQ(py["artifacts"]["summary.json"], "{\"ok\":true}");
  }
}

TEST_P(ContractTest, ArtifactsListedByDirectory) {
  RunInfo run = NewRun();
  ASSERT_TRUE(client_->UploadArtifact(run.run_id, "logs/attempt-0/master-0.log", "m0\n").ok());
  ASSERT_TRUE(client_->UploadArtifact(run.run_id, "logs/attempt-0/worker-0.log", "w0-\n").ok());
  ASSERT_TRUE(client_->UploadArtifact(run.run_id, "logs/attempt-1/worker-0.log", "w1\n").ok());
  ASSERT_TRUE(client_->UploadArtifact(run.run_id, "coach/history.json", "{}").ok());
  auto root = client_->ListArtifacts(run.run_id, "", 100);
  ASSERT_TRUE(root.ok()) << root.status();
  ASSERT_EQ(root->size(), 2u);
  EXPECT_EQ((*root)[0].path, "coach");
  EXPECT_TRUE((*root)[0].is_dir);
  EXPECT_EQ((*root)[1].path, "logs");
  auto attempts = client_->ListArtifacts(run.run_id, "logs", 100);
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].path, "logs/attempt-0");
  EXPECT_EQ((*attempts)[1].path, "logs/attempt-1");
  auto files = client_->ListArtifacts(run.run_id, "logs/attempt-0", 100);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "logs/attempt-0/master-0.log");
  EXPECT_FALSE((*files)[0].is_dir);
  EXPECT_EQ((*files)[0].file_size, 3);
  EXPECT_EQ((*files)[1].path, "logs/attempt-0/worker-0.log");
  EXPECT_EQ((*files)[1].file_size, 4);
  auto one = client_->ListArtifacts(run.run_id, "logs/attempt-0", 1);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->size(), 1u);
  auto none = client_->ListArtifacts(run.run_id, "logs/attempt-7", 100);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

TEST_P(ContractTest, SearchRunsByTagsTogether) {
  RunInfo a = NewRun({{"coach.deleted", "true"}, {"coach.namespace", "team-a"}});
  auto exp = client_->GetRun(a.run_id);
  ASSERT_TRUE(exp.ok());
  CreateRunRequest req;
  req.experiment_id = a.experiment_id;
  req.tags = {{"coach.deleted", "true"}, {"coach.namespace", "team-b"}};
  ASSERT_TRUE(client_->CreateRun(req).ok());
  SearchRunsRequest search;
  search.experiment_ids = {a.experiment_id};
  search.filter = "tags.`coach.deleted` = 'true' AND tags.`coach.namespace` = 'team-a'";
  auto runs = client_->SearchRuns(search);
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].run_id, a.run_id);
}

TEST_P(ContractTest, ErrorsMapToStatusCodes) {
  EXPECT_TRUE(absl::IsNotFound(client_->GetRun("0123456789abcdef0123456789abcdef").status()));
  EXPECT_TRUE(
      absl::IsNotFound(client_->LogMetric("0123456789abcdef0123456789abcdef", {"m", 1, 1, 1})));
  EXPECT_TRUE(absl::IsInvalidArgument(client_->LogMetric(NewRun().run_id, {"bad$key", 1, 1, 1})));
}

INSTANTIATE_TEST_SUITE_P(Implementations, ContractTest, ::testing::Values("fake", "real"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace coach::mlflow
