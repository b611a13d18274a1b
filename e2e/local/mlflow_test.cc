// MLflow tracking end to end: the real coach-operator (local backend) and coach-launch against
// a real `mlflow server` (integrations/mlflow/testing/mlflow_server.h), read back with the
// MLflow Python client. Skips without MLflow (tools/mlflow_env.sh install); fails under CI=true.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/testing/mlflow_server.h"
#include "nlohmann/json.hpp"
#include "operator/reconcile/conditions.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;
using mlflow::testing::MlflowServer;
using Json = nlohmann::json;

constexpr char kNs[] = "default";
constexpr char kRunIdAnnotation[] = "coach.dev/mlflow-run-id";

class MlflowE2eTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && op_ != nullptr) std::fprintf(stderr, "%s\n", op_->OperatorLog().c_str());
    op_.reset();
  }

  void StartOperator(const std::string& uri, std::vector<std::string> extra = {}) {
    OperatorOptions options;
    // A generous --mlflow-run-wait: on a loaded host a fresh server's first calls take seconds,
    // and these cases check what replicas do with the run id (the default is 5 s).
    options.extra_args = {"--mlflow-tracking-uri=" + uri, "--mlflow-experiment=e2e",
                          "--mlflow-max-backoff=1", "--mlflow-run-wait=30"};
    for (auto& a : extra) options.extra_args.push_back(std::move(a));
    op_ = std::make_unique<OperatorFixture>(
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), options);
    ASSERT_TRUE(op_->Start().ok()) << op_->OperatorLog();
  }

  TrainingJob Submit(const sdk::JobBuilder& builder) {
    TrainingJob job = BuildOrDie(builder);
    absl::StatusOr<TrainingJob> created = op_->client().CreateJob(job, kNs);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : job;
  }

  TrainingJob WaitFinished(const std::string& name, absl::Duration timeout = absl::Minutes(2)) {
    absl::StatusOr<TrainingJob> done = op_->WaitJob(
        name, [](const TrainingJob& j) { return reconcile::IsFinished(j.status()); }, timeout);
    EXPECT_TRUE(done.ok()) << done.status();
    return done.ok() ? *done : TrainingJob();
  }

  std::string RunIdOf(const std::string& name) {
    absl::StatusOr<TrainingJob> job = op_->WaitJob(
        name,
        [](const TrainingJob& j) { return j.metadata().annotations().count(kRunIdAnnotation) > 0; },
        absl::Seconds(60));
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->metadata().annotations().at(kRunIdAnnotation) : "";
  }

  Json ReadRun(const std::string& run_id, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {run_id};
    for (const std::string& a : extra) args.push_back(a);
    absl::StatusOr<std::string> out =
        MlflowServer::RunPython("read_run.py", args, {{"MLFLOW_TRACKING_URI", uri_}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? Json::parse(*out) : Json::object();
  }

  // Polls until the run has `status` (the tracker is asynchronous).
  Json WaitRunStatus(const std::string& run_id, const std::string& status,
                     const std::vector<std::string>& extra = {},
                     absl::Duration timeout = absl::Seconds(60)) {
    const absl::Time deadline = absl::Now() + timeout;
    Json run;
    do {
      run = ReadRun(run_id, extra);
      if (run.value("status", "") == status) return run;
      absl::SleepFor(absl::Milliseconds(300));
    } while (absl::Now() < deadline);
    ADD_FAILURE() << "run " << run_id << " never reached " << status << ": " << run.dump();
    return run;
  }

  int RunsTagged(const std::string& uid) {
    absl::StatusOr<std::string> out = MlflowServer::RunPython(
        "search_runs.py", {"e2e", "coach.job_uid", uid}, {{"MLFLOW_TRACKING_URI", uri_}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? static_cast<int>(Json::parse(*out)["runs"].size()) : -1;
  }

  static double Seconds(const TrainingJob& job) {
    return absl::ToDoubleSeconds(reconcile::FromTimestamp(job.status().completion_time()) -
                                 reconcile::FromTimestamp(job.metadata().creation_timestamp()));
  }

  std::string uri_;
  std::unique_ptr<OperatorFixture> op_;
};

TEST_F(MlflowE2eTest, SucceededJobHasOneFinishedRunWithTagsParamsLogsAndEnv) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartOperator(uri_);
  const TrainingJob created = Submit(
      ShellJob("ok", "echo \"hello from $HOSTNAME run=$MLFLOW_RUN_ID exp=$MLFLOW_EXPERIMENT_ID "
                     "uri=$MLFLOW_TRACKING_URI\"; sleep 1")
          .Masters(1)
          .Workers(1)
          .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("ok");
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << done.status().ShortDebugString();
  const std::string run_id = RunIdOf("ok");
  ASSERT_FALSE(run_id.empty());
  Json run = WaitRunStatus(run_id, "FINISHED",
                           {"--artifact", "logs/master-0.log", "--artifact", "logs/worker-0.log"});
  EXPECT_EQ(run["tags"]["coach.run_ended"], "FINISHED");
  EXPECT_EQ(run["run_name"], "default/ok");
  EXPECT_EQ(run["tags"]["coach.job_uid"], created.metadata().uid());
  EXPECT_EQ(run["tags"]["coach.kind"], "PyTorchJob");
  EXPECT_EQ(run["tags"]["coach.namespace"], "default");
  EXPECT_EQ(run["tags"]["coach.backend"], "local");
  EXPECT_EQ(run["tags"]["coach.state"], "Succeeded");
  EXPECT_EQ(run["tags"]["coach.condition.Succeeded"], "True");
  EXPECT_EQ(run["params"]["replicas.Master"], "1");
  EXPECT_EQ(run["params"]["replicas.Worker"], "1");
  EXPECT_EQ(run["params"]["world_size"], "2");
  EXPECT_EQ(run["params"]["restart_policy.Master"], "Never");
  ASSERT_TRUE(run["end_time"].is_number());
  EXPECT_EQ(run["end_time"].get<int64_t>(),
            absl::ToUnixMillis(reconcile::FromTimestamp(done.status().completion_time())));
  // The replicas saw the run (MLFLOW_RUN_ID) and their logs are the run's artifacts.
  const std::string master_log = run["artifacts"]["logs/master-0.log"];
  EXPECT_TRUE(absl::StrContains(master_log, "run=" + run_id)) << master_log;
  EXPECT_TRUE(absl::StrContains(master_log, "uri=" + uri_)) << master_log;
  EXPECT_TRUE(absl::StrContains(master_log, "exp=" + run["experiment_id"].get<std::string>()));
  EXPECT_TRUE(absl::StrContains(std::string(run["artifacts"]["logs/worker-0.log"]), "hello from"));
  EXPECT_EQ(RunsTagged(created.metadata().uid()), 1);
}

TEST_F(MlflowE2eTest, FailedJobFailsItsRunAndDeletedJobKillsIt) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartOperator(uri_);
  Submit(ShellJob("bad", "echo about to fail; exit 3").Masters(1).RestartPolicy("Never"));
  Submit(ShellJob("del", "echo running; sleep 300").Masters(1).RestartPolicy("Never"));
  const TrainingJob bad = WaitFinished("bad");
  EXPECT_FALSE(sdk::IsJobSucceeded(bad));
  Json run = WaitRunStatus(RunIdOf("bad"), "FAILED", {"--artifact", "logs/master-0.log"});
  EXPECT_EQ(run["tags"]["coach.state"], "Failed");
  EXPECT_TRUE(run["end_time"].is_number());
  EXPECT_TRUE(absl::StrContains(std::string(run["artifacts"]["logs/master-0.log"]), "about to fail"));

  const std::string del_run = RunIdOf("del");
  ASSERT_TRUE(op_->WaitJob("del", [](const TrainingJob& j) {
                   return reconcile::HasTrueCondition(j.status(), "Running");
                 }).ok());
  absl::SleepFor(absl::Milliseconds(500));
  const int64_t before_ms = absl::ToUnixMillis(absl::Now());
  ASSERT_TRUE(op_->client().DeleteJob(kNs, "del").ok());
  run = WaitRunStatus(del_run, "KILLED", {"--artifact", "logs/master-0.log"});
  ASSERT_TRUE(run["end_time"].is_number());
  EXPECT_GE(run["end_time"].get<int64_t>(), before_ms);
  EXPECT_TRUE(absl::StrContains(std::string(run["artifacts"]["logs/master-0.log"]), "running"));
}

TEST_F(MlflowE2eTest, OperatorRestartDoesNotCreateASecondRun) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartOperator(uri_);
  const TrainingJob created =
      Submit(ShellJob("restart", "sleep 4; echo done").Masters(1).RestartPolicy("Never"));
  const std::string run_id = RunIdOf("restart");
  ASSERT_TRUE(op_->Kill9().ok());
  ASSERT_TRUE(op_->Restart().ok()) << op_->OperatorLog();
  const TrainingJob done = WaitFinished("restart");
  EXPECT_TRUE(sdk::IsJobSucceeded(done));
  WaitRunStatus(run_id, "FINISHED");
  EXPECT_EQ(RunsTagged(created.metadata().uid()), 1);
  EXPECT_EQ(done.metadata().annotations().at(kRunIdAnnotation), run_id);
  // And once more after the end: still one run, still FINISHED.
  ASSERT_TRUE(op_->Stop().ok());
  ASSERT_TRUE(op_->Restart().ok());
  absl::SleepFor(absl::Seconds(2));
  EXPECT_EQ(RunsTagged(created.metadata().uid()), 1);
  EXPECT_EQ(ReadRun(run_id)["status"], "FINISHED");
}

TEST_F(MlflowE2eTest, PythonTrainingScriptLogsIntoTheJobsRun) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  absl::StatusOr<std::string> python = MlflowServer::Python();
  ASSERT_TRUE(python.ok()) << python.status();
  StartOperator(uri_);
  const std::string script = op_->root() + "/train.py";
  WriteFileOrDie(script, R"(import os
import mlflow
import torch

torch.manual_seed(0)
w = torch.zeros(3, requires_grad=True)
x, y = torch.randn(32, 3), torch.randn(32)
opt = torch.optim.SGD([w], lr=0.1)
injected = os.environ["MLFLOW_RUN_ID"]  # mlflow.start_run() removes it from os.environ
with mlflow.start_run() as run:  # resumes MLFLOW_RUN_ID
    assert run.info.run_id == injected, (run.info.run_id, injected)
    for step in range(5):
        loss = ((x @ w - y) ** 2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        mlflow.log_metric("torch_loss", loss.item(), step=step)
print("trained", flush=True)
)");
  Submit(ShellJob("torch", absl::StrCat("exec ", *python, " ", script)).Masters(1).RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("torch", absl::Minutes(3));
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("torch", "master-0").value_or("");
  // The script's `with` block ends the run itself; the operator's outcome lands after it.
  const std::string run_id = RunIdOf("torch");
  Json run;
  for (int i = 0; i < 100; ++i) {
    run = WaitRunStatus(run_id, "FINISHED", {"--metric", "torch_loss"});
    if (run["tags"].value("coach.run_ended", "") == "FINISHED") break;
    absl::SleepFor(absl::Milliseconds(300));
  }
  EXPECT_EQ(run["tags"]["coach.run_ended"], "FINISHED");
  EXPECT_EQ(run["metrics"]["torch_loss"]["count"], 5);
  EXPECT_EQ(run["metrics"]["torch_loss"]["max_step"], 4);
  EXPECT_EQ(run["tags"]["coach.state"], "Succeeded");
}

TEST_F(MlflowE2eTest, CoachMetricLinesThroughCoachLaunchLandWithSteps) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartOperator(uri_);
  Submit(ShellJob("launch",
                  "exec coach-launch -- sh -c 'for i in 0 1 2 3 4 5 6 7; do "
                  "echo \"coach-metric name=cl_loss value=0.$i step=$i\"; done; "
                  "echo \"coach-metric name=cl_acc value=0.5 step=9 timestamp=1700000000000\"'")
             .Masters(1)
             .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("launch");
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("launch", "master-0").value_or("");
  Json run = WaitRunStatus(RunIdOf("launch"), "FINISHED", {"--metric", "cl_loss", "--metric", "cl_acc"});
  EXPECT_EQ(run["metrics"]["cl_loss"]["count"], 8);
  EXPECT_EQ(run["metrics"]["cl_loss"]["distinct_steps"], 8);
  EXPECT_EQ(run["metrics"]["cl_acc"]["max_step"], 9);
  // The lines are still in the log, unchanged.
  const std::string log = op_->Logs("launch", "master-0").value_or("");
  EXPECT_TRUE(absl::StrContains(log, "coach-metric name=cl_loss value=0.7 step=7\n")) << log;
  EXPECT_TRUE(absl::StrContains(log, "9 line(s), 9 delivered")) << log;
}

TEST_F(MlflowE2eTest, ServerDownMidJobNeitherSlowsNorLosesPoints) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartOperator(uri_);
  // 60 points, one per 0.2 s; after the 30th the script waits until the test has brought the
  // server back (however long a restart takes on this host), then prints the other 30.
  const std::string mark = op_->root() + "/server-back";
  Submit(ShellJob("outage",
                  absl::StrCat("exec coach-launch -- sh -c 'i=0; while [ $i -lt 60 ]; do "
                               "echo \"coach-metric name=tick value=$i step=$i\"; i=$((i+1)); "
                               "sleep 0.2; if [ $i -eq 30 ]; then while [ ! -e ",
                               mark, " ]; do sleep 0.1; done; fi; done'"))
             .Masters(1)
             .RestartPolicy("Never"));
  const std::string run_id = RunIdOf("outage");
  absl::SleepFor(absl::Seconds(1));
  ASSERT_TRUE(server->Stop().ok());
  absl::SleepFor(absl::Seconds(4));  // points keep coming meanwhile; the operator's calls fail
  ASSERT_TRUE(server->Restart().ok());
  const absl::Time back = absl::Now();
  WriteFileOrDie(mark, "");
  const TrainingJob done = WaitFinished("outage");
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("outage", "master-0").value_or("");
  const double after_back =
      absl::ToDoubleSeconds(reconcile::FromTimestamp(done.status().completion_time()) - back);
  for (absl::string_view line : absl::StrSplit(op_->Logs("outage", "master-0").value_or(""), '\n')) {
    if (absl::StartsWith(line, "coach-launch:")) std::printf("%s\n", std::string(line).c_str());
  }
  std::printf("outage job: completed %.2f s after the server was back (30 points x 0.2 s = 6 s)\n",
              after_back);
  EXPECT_LT(after_back, 6 + 6);
  Json run = WaitRunStatus(run_id, "FINISHED", {"--metric", "tick"});
  EXPECT_EQ(run["metrics"]["tick"]["count"], 60);
  EXPECT_EQ(run["metrics"]["tick"]["distinct_steps"], 60);
  EXPECT_EQ(run["tags"]["coach.state"], "Succeeded");
}

TEST_F(MlflowE2eTest, UnreachableServerDoesNotSlowJobs) {
  // The same short job with MLflow up and with the tracking URI pointing at nothing.
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartOperator(uri_);
  Submit(ShellJob("up", "sleep 1").Masters(1).RestartPolicy("Never"));
  const double up = Seconds(WaitFinished("up"));
  op_.reset();
  StartOperator(absl::StrCat("http://127.0.0.1:", FreePort()));
  Submit(ShellJob("down", "sleep 1").Masters(1).RestartPolicy("Never"));
  const TrainingJob down_job = WaitFinished("down");
  EXPECT_TRUE(sdk::IsJobSucceeded(down_job));
  const double down = Seconds(down_job);
  std::printf("job duration: MLflow up %.2f s, MLflow unreachable %.2f s\n", up, down);
  EXPECT_LT(down, up + 1.0);
  EXPECT_EQ(down_job.metadata().annotations().count(kRunIdAnnotation), 0u);
}

TEST_F(MlflowE2eTest, BadAnnotationIsRefusedAtAdmission) {
  StartOperator("http://127.0.0.1:1");
  absl::StatusOr<TrainingJob> created = op_->client().CreateJob(
      BuildOrDie(ShellJob("badann", "true")
                     .Masters(1)
                     .Annotation("coach.dev/mlflow-tracking-uri", "ftp://nope")),
      kNs);
  ASSERT_FALSE(created.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(created.status())) << created.status();
  EXPECT_TRUE(absl::StrContains(created.status().message(), "coach.dev/mlflow-tracking-uri"))
      << created.status();
}

}  // namespace
}  // namespace coach::e2e
