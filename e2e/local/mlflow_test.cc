// MLflow tracking end to end: the real coach-operator (local backend) and coach-launch against
// a real `mlflow server` (integrations/mlflow/testing/mlflow_server.h), read back with the
// MLflow Python client. Skips without MLflow (tools/mlflow_env.sh install); fails under CI=true.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/mlflow_operator_test.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/testing/delay_proxy.h"
#include "integrations/mlflow/testing/mlflow_server.h"
#include "nlohmann/json.hpp"
#include "operator/reconcile/conditions.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;
using mlflow::testing::MlflowServer;
using Json = nlohmann::json;

class MlflowE2eTest : public MlflowOperatorTest {
 protected:
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

  // Polls until the run has `status` (the tracker is asynchronous).
  Json WaitRunStatus(const std::string& run_id, const std::string& status,
                     const std::vector<std::string>& extra = {},
                     absl::Duration timeout = absl::Seconds(60)) {
    Json run;
    if (Eventually(
            [&] {
              run = ReadRun(run_id, extra);
              return run.value("status", "") == status;
            },
            timeout, absl::Milliseconds(300))) {
      return run;
    }
    ADD_FAILURE() << "run " << run_id << " never reached " << status << ": " << run.dump();
    return run;
  }

  int RunsTagged(const std::string& uid) {
    absl::StatusOr<std::string> out = MlflowServer::RunPython(
        "search_runs.py", {"e2e", "coach.job_uid", uid}, {{"MLFLOW_TRACKING_URI", uri_}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? static_cast<int>(Json::parse(*out)["runs"].size()) : -1;
  }

  int RunsInExperiment() {
    absl::StatusOr<std::string> out = MlflowServer::RunPython("search_runs.py", {"e2e", "-", ""},
                                                              {{"MLFLOW_TRACKING_URI", uri_}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? static_cast<int>(Json::parse(*out)["runs"].size()) : -1;
  }

  // The job's events with `reason`.
  std::vector<api::v1::Event> EventsOf(const std::string& name, const std::string& reason) {
    absl::StatusOr<api::v1::DescribeJobResponse> d = op_->client().DescribeJob(kNs, name);
    EXPECT_TRUE(d.ok()) << d.status();
    std::vector<api::v1::Event> out;
    if (!d.ok()) return out;
    for (const api::v1::Event& e : d->events()) {
      if (e.reason() == reason) out.push_back(e);
    }
    return out;
  }

  // A script printing what its replica got, then (on the master) logging 5 points through
  // mlflow.start_run(), which resumes the job's run there (coach's binding).
  std::string WriteTrainScript() {
    const std::string script = op_->root() + "/first.py";
    WriteFileOrDie(script, R"(import os
import mlflow

print("env run=" + os.environ.get("COACH_MLFLOW_RUN_ID", ""), flush=True)
if os.environ.get("RANK") == "0":  # the master
    with mlflow.start_run() as run:
        print("script run=" + run.info.run_id, flush=True)
        for step in range(5):
            mlflow.log_metric("first_loss", 1.0 / (step + 1), step=step)
)");
    return script;
  }

  static double Seconds(const TrainingJob& job) {
    return absl::ToDoubleSeconds(reconcile::FromTimestamp(job.status().completion_time()) -
                                 reconcile::FromTimestamp(job.metadata().creation_timestamp()));
  }
};

TEST_F(MlflowE2eTest, SucceededJobHasOneFinishedRunWithTagsParamsLogsAndEnv) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartWithMlflow(uri_);
  const TrainingJob created = Submit(
      ShellJob(
          "ok",
          "echo \"hello from $HOSTNAME run=$COACH_MLFLOW_RUN_ID exp=$COACH_MLFLOW_EXPERIMENT_ID "
          "uri=$MLFLOW_TRACKING_URI\"; sleep 1")
          .Masters(1)
          .Workers(1)
          .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("ok");
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << done.status().ShortDebugString();
  const std::string run_id = RunIdOf("ok");
  ASSERT_FALSE(run_id.empty());
  Json run = WaitRunStatus(
      run_id, "FINISHED",
      {"--artifact", "logs/attempt-0/master-0.log", "--artifact", "logs/attempt-0/worker-0.log"});
  EXPECT_EQ(run["tags"]["coach.run_ended"], "FINISHED");
  EXPECT_EQ(run["run_name"], "default/ok");
  EXPECT_EQ(run["tags"]["coach.job_uid"], created.metadata().uid());
  EXPECT_EQ(run["tags"]["coach.kind"], "PyTorchJob");
  EXPECT_EQ(run["tags"]["coach.namespace"], "default");
  EXPECT_EQ(run["tags"]["coach.backend"], "local");
  EXPECT_EQ(run["tags"]["coach.state"], "Succeeded");
  EXPECT_EQ(run["tags"]["coach.condition.Succeeded"], "True");
  EXPECT_EQ(run["params"]["coach.replicas.Master"], "1");
  EXPECT_EQ(run["params"]["coach.replicas.Worker"], "1");
  EXPECT_EQ(run["params"]["coach.world_size"], "2");
  EXPECT_EQ(run["params"]["coach.restart_policy.Master"], "Never");
  ASSERT_TRUE(run["end_time"].is_number());
  EXPECT_EQ(run["end_time"].get<int64_t>(),
            absl::ToUnixMillis(reconcile::FromTimestamp(done.status().completion_time())));
  // The replicas saw the run (COACH_MLFLOW_RUN_ID) and their logs are the run's artifacts.
  const std::string master_log = run["artifacts"]["logs/attempt-0/master-0.log"];
  EXPECT_TRUE(absl::StrContains(master_log, "run=" + run_id)) << master_log;
  EXPECT_TRUE(absl::StrContains(master_log, "uri=" + uri_)) << master_log;
  EXPECT_TRUE(absl::StrContains(master_log, "exp=" + run["experiment_id"].get<std::string>()));
  EXPECT_TRUE(absl::StrContains(std::string(run["artifacts"]["logs/attempt-0/worker-0.log"]),
                                "hello from"));
  EXPECT_EQ(RunsTagged(created.metadata().uid()), 1);
}

TEST_F(MlflowE2eTest, FailedJobFailsItsRunAndDeletedJobKillsIt) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartWithMlflow(uri_);
  Submit(ShellJob("bad", "echo about to fail; exit 3").Masters(1).RestartPolicy("Never"));
  Submit(ShellJob("del", "echo running; sleep 300").Masters(1).RestartPolicy("Never"));
  const TrainingJob bad = WaitFinished("bad");
  EXPECT_FALSE(sdk::IsJobSucceeded(bad));
  Json run = WaitRunStatus(RunIdOf("bad"), "FAILED", {"--artifact", "logs/attempt-0/master-0.log"});
  EXPECT_EQ(run["tags"]["coach.state"], "Failed");
  EXPECT_TRUE(run["end_time"].is_number());
  EXPECT_TRUE(absl::StrContains(std::string(run["artifacts"]["logs/attempt-0/master-0.log"]),
                                "about to fail"));

  const std::string del_run = RunIdOf("del");
  ASSERT_TRUE(op_->WaitJob("del",
                           [](const TrainingJob& j) {
                             return reconcile::HasTrueCondition(j.status(), "Running");
                           })
                  .ok());
  absl::SleepFor(absl::Milliseconds(500));
  const int64_t before_ms = absl::ToUnixMillis(absl::Now());
  ASSERT_TRUE(op_->client().DeleteJob(kNs, "del").ok());
  run = WaitRunStatus(del_run, "KILLED", {"--artifact", "logs/attempt-0/master-0.log"});
  ASSERT_TRUE(run["end_time"].is_number());
  EXPECT_GE(run["end_time"].get<int64_t>(), before_ms);
  EXPECT_TRUE(
      absl::StrContains(std::string(run["artifacts"]["logs/attempt-0/master-0.log"]), "running"));
}

TEST_F(MlflowE2eTest, OperatorRestartDoesNotCreateASecondRun) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartWithMlflow(uri_);
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
  StartWithMlflow(uri_);
  const std::string script = op_->root() + "/train.py";
  WriteFileOrDie(script, R"(import os
import mlflow
import torch

torch.manual_seed(0)
w = torch.zeros(3, requires_grad=True)
x, y = torch.randn(32, 3), torch.randn(32)
opt = torch.optim.SGD([w], lr=0.1)
injected = os.environ["COACH_MLFLOW_RUN_ID"]
with mlflow.start_run() as run:  # the master resumes the job's run (coach's binding)
    assert run.info.run_id == injected, (run.info.run_id, injected)
    for step in range(5):
        loss = ((x @ w - y) ** 2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        mlflow.log_metric("torch_loss", loss.item(), step=step)
print("trained", flush=True)
)");
  Submit(ShellJob("torch", absl::StrCat("exec ", *python, " ", script))
             .Masters(1)
             .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("torch", absl::Minutes(3));
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("torch", "master-0").value_or("");
  // The script's `with` block ends the run itself; the operator's outcome lands after it.
  const std::string run_id = RunIdOf("torch");
  Json run;
  Eventually(
      [&] {
        run = WaitRunStatus(run_id, "FINISHED", {"--metric", "torch_loss"});
        return run["tags"].value("coach.run_ended", "") == "FINISHED";
      },
      absl::Minutes(2), absl::Milliseconds(300));
  EXPECT_EQ(run["tags"]["coach.run_ended"], "FINISHED");
  EXPECT_EQ(run["metrics"]["torch_loss"]["count"], 5);
  EXPECT_EQ(run["metrics"]["torch_loss"]["max_step"], 4);
  EXPECT_EQ(run["tags"]["coach.state"], "Succeeded");
}

TEST_F(MlflowE2eTest, CoachMetricLinesThroughCoachLaunchLandWithSteps) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  StartWithMlflow(uri_);
  Submit(ShellJob("launch",
                  "exec coach-launch -- sh -c 'for i in 0 1 2 3 4 5 6 7; do "
                  "echo \"coach-metric name=cl_loss value=0.$i step=$i\"; done; "
                  "echo \"coach-metric name=cl_acc value=0.5 step=9 timestamp=1700000000000\"'")
             .Masters(1)
             .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("launch");
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("launch", "master-0").value_or("");
  Json run =
      WaitRunStatus(RunIdOf("launch"), "FINISHED", {"--metric", "cl_loss", "--metric", "cl_acc"});
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
  StartWithMlflow(uri_);
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
  for (absl::string_view line :
       absl::StrSplit(op_->Logs("outage", "master-0").value_or(""), '\n')) {
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

// A freshly started operator and a server that is still starting. The first job's
// replicas wait for its run: every one gets its id, and a Python replica's
// mlflow.start_run() + log_metric land in the job's run, the only run of the experiment.
TEST_F(MlflowE2eTest, FirstJobOfAFreshOperatorAndAStartingServerLogsIntoItsOneRun) {
  absl::StatusOr<std::string> python = MlflowServer::Python();
  if (!python.ok() && !mlflow::testing::InCi()) GTEST_SKIP() << python.status().message();
  ASSERT_TRUE(python.ok()) << python.status();
  const int port = FreePort();
  uri_ = absl::StrCat("http://127.0.0.1:", port);
  StartWithMlflow(uri_);  // before the server: its first calls are refused
  const std::string script = WriteTrainScript();
  Submit(ShellJob("first", absl::StrCat("exec ", *python, " ", script))
             .Masters(1)
             .Workers(2)
             .RestartPolicy("Never"));
  MlflowServer::Options options;
  options.port = port;
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start(options));
  const TrainingJob done = WaitFinished("first", absl::Minutes(4));
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("first", "master-0").value_or("");
  const std::string run_id = RunIdOf("first");
  ASSERT_FALSE(run_id.empty());
  for (const char* replica : {"master-0", "worker-0", "worker-1"}) {
    const std::string log = op_->Logs("first", replica).value_or("");
    EXPECT_TRUE(absl::StrContains(log, "env run=" + run_id + "\n")) << replica << ": " << log;
  }
  EXPECT_TRUE(
      absl::StrContains(op_->Logs("first", "master-0").value_or(""), "script run=" + run_id));
  Json run = WaitRunStatus(run_id, "FINISHED", {"--metric", "first_loss"});
  EXPECT_EQ(run["metrics"]["first_loss"]["count"], 5);
  EXPECT_EQ(run["tags"].count("coach.run_incomplete"), 0u);
  EXPECT_EQ(RunsInExperiment(), 1);
  EXPECT_TRUE(EventsOf("first", "MlflowRunNotReady").empty());
}

// A slow server (every answer 3 s late through a proxy, so the run takes longer than the old
// 5 s wait): the replicas wait and start with the run id once the server has answered.
TEST_F(MlflowE2eTest, SlowServerReplicasWaitAndStartWithTheRunId) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  mlflow::testing::DelayProxy proxy(server->uri());
  proxy.SetDelay(absl::Seconds(3));
  uri_ = server->uri();
  StartWithMlflow(proxy.uri());
  Submit(ShellJob("slow", "echo \"env run=$COACH_MLFLOW_RUN_ID\"")
             .Masters(1)
             .Workers(1)
             .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("slow", absl::Minutes(4));
  ASSERT_TRUE(sdk::IsJobSucceeded(done));
  const std::string run_id = RunIdOf("slow");
  ASSERT_FALSE(run_id.empty());
  for (const char* replica : {"master-0", "worker-0"}) {
    const std::string log = op_->Logs("slow", replica).value_or("");
    EXPECT_TRUE(absl::StrContains(log, "env run=" + run_id + "\n")) << replica << ": " << log;
  }
  const absl::Duration waited = reconcile::FromTimestamp(done.status().start_time()) -
                                reconcile::FromTimestamp(done.metadata().creation_timestamp());
  std::printf("slow server (3 s per answer, %d requests): replicas started %.1f s after the job\n",
              proxy.requests(), absl::ToDoubleSeconds(waited));
  EXPECT_EQ(RunsTagged(done.metadata().uid()), 1);
  EXPECT_TRUE(EventsOf("slow", "MlflowRunNotReady").empty());
}

// An unreachable server: the job waits the bound (--mlflow-run-wait=5 here), starts without
// the run's id with a Warning event naming the server and the wait, and runs to Succeeded.
// When the server comes back the run is made, tagged coach.run_incomplete=true, and ended.
TEST_F(MlflowE2eTest, UnreachableServerCostsTheBoundedWaitThenTheRunIsMarkedIncomplete) {
  absl::StatusOr<std::string> python = MlflowServer::Python();
  if (!python.ok() && !mlflow::testing::InCi()) GTEST_SKIP() << python.status().message();
  ASSERT_TRUE(python.ok()) << python.status();
  const int port = FreePort();
  uri_ = absl::StrCat("http://127.0.0.1:", port);
  StartWithMlflow(uri_, {"--mlflow-run-wait=5"});
  const TrainingJob created =
      Submit(ShellJob("down", "echo \"env run=$COACH_MLFLOW_RUN_ID uri=$MLFLOW_TRACKING_URI\"")
                 .Masters(1)
                 .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("down");
  ASSERT_TRUE(sdk::IsJobSucceeded(done));
  EXPECT_EQ(done.metadata().annotations().count(kRunIdAnnotation), 0u);
  const std::string log = op_->Logs("down", "master-0").value_or("");
  EXPECT_TRUE(absl::StrContains(log, "env run= uri=" + uri_)) << log;
  const absl::Duration waited = reconcile::FromTimestamp(done.status().start_time()) -
                                reconcile::FromTimestamp(created.metadata().creation_timestamp());
  std::printf("unreachable server: replicas started %.1f s after the job (bound 5 s)\n",
              absl::ToDoubleSeconds(waited));
  std::vector<api::v1::Event> warned = EventsOf("down", "MlflowRunNotReady");
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].type(), "Warning");
  EXPECT_TRUE(absl::StrContains(warned[0].message(), uri_)) << warned[0].message();
  EXPECT_TRUE(absl::StrContains(warned[0].message(), "5s")) << warned[0].message();

  // The server comes back: the job's run appears, marked incomplete, and ends FINISHED.
  MlflowServer::Options options;
  options.port = port;
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start(options));
  const std::string run_id = RunIdOf("down");
  ASSERT_FALSE(run_id.empty());
  Json run = WaitRunStatus(run_id, "FINISHED");
  EXPECT_EQ(run["tags"]["coach.run_incomplete"], "true");
  EXPECT_TRUE(absl::StrContains(std::string(run["tags"].value("coach.run_incomplete_reason", "")),
                                "lack its id"));
  EXPECT_EQ(RunsTagged(created.metadata().uid()), 1);
  std::vector<api::v1::Event> incomplete = EventsOf("down", "MlflowRunIncomplete");
  ASSERT_EQ(incomplete.size(), 1u);
  EXPECT_TRUE(absl::StrContains(incomplete[0].message(), run_id)) << incomplete[0].message();
}

// The snippet most MLflow users write (its own server call, its own experiment), unchanged, as
// the program of every rank of a 3-replica PyTorchJob: the job Succeeds, each rank's points are in
// a run of its own in the code's experiment, tagged with the job, and the job lists them.
TEST_F(MlflowE2eTest, TheCanonicalSnippetRunsOnEveryRankAndTheJobListsItsRuns) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  absl::StatusOr<std::string> python = MlflowServer::Python();
  ASSERT_TRUE(python.ok()) << python.status();
  StartWithMlflow(uri_);
  const std::string script = op_->root() + "/snippet.py";
  WriteFileOrDie(script, absl::StrCat(R"(import os
import mlflow

world_size = int(os.environ["WORLD_SIZE"])
loss = 1.0 / (1 + int(os.environ["RANK"]))

mlflow.set_tracking_uri(")",
                                      uri_, R"(")
mlflow.set_experiment("distributed-training")
with mlflow.start_run():
    mlflow.log_param("world_size", world_size)
    mlflow.log_metric("loss", loss)
print("logged", flush=True)
)"));
  const TrainingJob created =
      Submit(ShellJob("snippet", absl::StrCat("exec ", *python, " ", script))
                 .Masters(1)
                 .Workers(2)
                 .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("snippet", absl::Minutes(4));
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("snippet", "master-0").value_or("");
  const std::string run_id = RunIdOf("snippet");
  WaitRunStatus(run_id, "FINISHED");

  absl::StatusOr<std::string> out = MlflowServer::RunPython(
      "search_runs.py", {"distributed-training", "coach.job_uid", created.metadata().uid()},
      {{"MLFLOW_TRACKING_URI", uri_}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Json found = Json::parse(*out);
  std::map<std::string, Json> by_rank;
  for (const Json& run : found["runs"]) by_rank[run["tags"]["coach.rank"].get<std::string>()] = run;
  ASSERT_EQ(by_rank.size(), 3u) << *out << "\nmaster-0:\n"
                                << op_->Logs("snippet", "master-0").value_or("");
  for (const auto& [rank, run] : by_rank) {
    SCOPED_TRACE("rank " + rank);
    EXPECT_EQ(run["params"]["world_size"], "3");
    EXPECT_DOUBLE_EQ(run["metrics"]["loss"].get<double>(), 1.0 / (1 + std::stoi(rank)));
    EXPECT_EQ(run["tags"]["coach.job_name"], "snippet");
    EXPECT_EQ(run["tags"]["coach.kind"], "PyTorchJob");
    EXPECT_EQ(run["tags"]["mlflow.parentRunId"], run_id);
  }
  EXPECT_EQ(by_rank["0"]["tags"]["coach.replica"], "master-0");
  EXPECT_EQ(by_rank["2"]["tags"]["coach.replica"], "worker-1");

  // The job lists them: its annotation (what `coach describe` prints) and an Event each.
  // (Workers may outlive the master that ends the job: the operator looks again after the end.)
  absl::StatusOr<TrainingJob> listed = op_->WaitJob(
      "snippet",
      [](const TrainingJob& j) {
        auto it = j.metadata().annotations().find("coach.dev/mlflow-runs");
        return it != j.metadata().annotations().end() && Json::parse(it->second).size() == 4;
      },
      absl::Seconds(90));
  ASSERT_TRUE(listed.ok()) << listed.status();
  const Json runs = Json::parse(listed->metadata().annotations().at("coach.dev/mlflow-runs"));
  ASSERT_EQ(runs.size(), 4u) << runs.dump();
  EXPECT_EQ(runs[0]["run_id"], run_id);
  std::set<std::string> listed_ids;
  for (const Json& r : runs) listed_ids.insert(r["run_id"]);
  for (const auto& [rank, run] : by_rank) EXPECT_EQ(listed_ids.count(run["run_id"]), 1u) << rank;
  std::vector<api::v1::Event> linked = EventsOf("snippet", "MlflowRunLinked");
  ASSERT_EQ(linked.size(), 3u);
  EXPECT_TRUE(absl::StrContains(linked[0].message(), uri_ + "/#/experiments/"))
      << linked[0].message();
}

// Code that names no experiment: the master's points land in the job's run; a worker's in a run
// of its own under the job's run; no rank fails on a param the others set differently.
TEST_F(MlflowE2eTest, CodeNamingNoExperimentLogsTheMastersPointsIntoTheJobsRun) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  absl::StatusOr<std::string> python = MlflowServer::Python();
  ASSERT_TRUE(python.ok()) << python.status();
  StartWithMlflow(uri_);
  const std::string script = op_->root() + "/plain.py";
  WriteFileOrDie(script, R"(import os
import mlflow

with mlflow.start_run():
    mlflow.log_param("rank", os.environ["RANK"])
    mlflow.log_param("world_size", os.environ["WORLD_SIZE"])
    mlflow.log_metric("plain_loss", 0.5 + int(os.environ["RANK"]))
)");
  const TrainingJob created = Submit(ShellJob("plain", absl::StrCat("exec ", *python, " ", script))
                                         .Masters(1)
                                         .Workers(1)
                                         .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("plain", absl::Minutes(4));
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("plain", "worker-0").value_or("");
  const std::string run_id = RunIdOf("plain");
  Json run = WaitRunStatus(run_id, "FINISHED", {"--metric", "plain_loss"});
  EXPECT_EQ(run["metrics"]["plain_loss"]["count"], 1);
  EXPECT_EQ(run["params"]["rank"], "0");
  EXPECT_EQ(run["params"]["coach.world_size"], "2");
  absl::StatusOr<std::string> out =
      MlflowServer::RunPython("search_runs.py", {"e2e", "coach.job_uid", created.metadata().uid()},
                              {{"MLFLOW_TRACKING_URI", uri_}});
  ASSERT_TRUE(out.ok()) << out.status();
  int workers = 0;
  const Json found = Json::parse(*out);
  for (const Json& r : found["runs"]) {
    if (r["run_id"] == run_id) continue;
    ++workers;
    EXPECT_EQ(r["tags"]["coach.replica"], "worker-0");
    EXPECT_EQ(r["tags"]["mlflow.parentRunId"], run_id);
    EXPECT_EQ(r["params"]["rank"], "1");
    EXPECT_DOUBLE_EQ(r["metrics"]["plain_loss"].get<double>(), 1.5);
  }
  EXPECT_EQ(workers, 1) << *out;
}

// examples/mlflow/train_mlflow.py, real DDP training that logs as the snippet does, as a 3-replica
// job: every rank's 20 loss points are in its run, tagged with the job.
TEST_F(MlflowE2eTest, TheMlflowExampleTrainsAndEveryRankLogs) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  absl::StatusOr<std::string> python = MlflowServer::Python();
  ASSERT_TRUE(python.ok()) << python.status();
  StartWithMlflow(uri_);
  const std::string program = MlflowServer::Runfile("examples/mlflow/train_mlflow.py");
  const TrainingJob created =
      Submit(ShellJob("example", absl::StrCat("exec ", *python, " ", program, " --experiment ex"))
                 .Masters(1)
                 .Workers(2)
                 .RestartPolicy("Never"));
  const TrainingJob done = WaitFinished("example", absl::Minutes(4));
  ASSERT_TRUE(sdk::IsJobSucceeded(done)) << op_->Logs("example", "master-0").value_or("");
  EXPECT_TRUE(absl::StrContains(op_->Logs("example", "worker-1").value_or(""), "status=ok"));
  absl::StatusOr<std::string> out =
      MlflowServer::RunPython("search_runs.py", {"ex", "coach.job_uid", created.metadata().uid()},
                              {{"MLFLOW_TRACKING_URI", uri_}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Json found = Json::parse(*out);
  ASSERT_EQ(found["runs"].size(), 3u) << *out << "\n"
                                      << op_->Logs("example", "master-0").value_or("")
                                      << op_->Logs("example", "worker-0").value_or("")
                                      << op_->Logs("example", "worker-1").value_or("");
  for (const Json& run : found["runs"]) {
    EXPECT_EQ(run["params"]["world_size"], "3");
    Json history = ReadRun(run["run_id"].get<std::string>(), {"--metric", "loss"});
    EXPECT_EQ(history["metrics"]["loss"]["count"], 20) << history.dump();
  }
}

// The operator's credentials go to its own server only: a job may name another server only from
// the operator's allowlist, and the operator calls that one without them.
TEST_F(MlflowE2eTest, AJobNamedServerIsAllowedOnlyByTheOperatorAndGetsNoCredentials) {
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  mlflow::testing::DelayProxy own(server->uri());
  mlflow::testing::DelayProxy named(server->uri());
  ::setenv("MLFLOW_TRACKING_TOKEN", "operators-secret", 1);
  StartWithMlflow(own.uri(), {"--mlflow-allowed-tracking-uris=" + named.uri()});
  ::unsetenv("MLFLOW_TRACKING_TOKEN");
  absl::StatusOr<TrainingJob> refused = op_->client().CreateJob(
      BuildOrDie(ShellJob("elsewhere", "true")
                     .Masters(1)
                     .Annotation("coach.dev/mlflow-tracking-uri", "http://127.0.0.1:1")),
      kNs);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "--mlflow-allowed-tracking-uris"))
      << refused.status();
  refused = op_->client().CreateJob(
      BuildOrDie(ShellJob("metadata", "true")
                     .Masters(1)
                     .Annotation("coach.dev/mlflow-tracking-uri", "http://169.254.169.254")),
      kNs);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();

  Submit(ShellJob("mine", "true").Masters(1).RestartPolicy("Never"));
  Submit(ShellJob("theirs", "true")
             .Masters(1)
             .RestartPolicy("Never")
             .Annotation("coach.dev/mlflow-tracking-uri", named.uri()));
  EXPECT_TRUE(sdk::IsJobSucceeded(WaitFinished("mine")));
  EXPECT_TRUE(sdk::IsJobSucceeded(WaitFinished("theirs")));
  WaitRunStatus(RunIdOf("mine"), "FINISHED");
  WaitRunStatus(RunIdOf("theirs"), "FINISHED");
  EXPECT_GT(own.authorized_requests(), 0);
  EXPECT_GT(named.requests(), 0);
  EXPECT_EQ(named.authorized_requests(), 0);
}

TEST_F(MlflowE2eTest, BadAnnotationIsRefusedAtAdmission) {
  StartWithMlflow("http://127.0.0.1:1");
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
