#include "sdk/cpp/cli/remote_commands.h"

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/v1/codec/job_codec.h"
#include "nlohmann/json.hpp"
#include "operator/core/testing/fake_backend.h"
#include "operator/model/observed_state.h"
#include "operator/server/testing/in_memory_server.h"
#include "operator/store/job_store.h"
#include "operator/store/testing/fake_job_store.h"
#include "sdk/cpp/cli/coach_status_text.h"
#include "sdk/cpp/cli/exit_codes.h"
#include "sdk/cpp/testing/fake_history_server.h"
#include "sdk/cpp/testing/test_jobs.h"

namespace coach::cli {
namespace {

using api::v1::JobAttempt;
using api::v1::TrainingJob;
using sdk::testing::FakeHistoryServer;
using sdk::testing::JobWithConditions;
using server::testing::InMemoryServer;
using ::testing::HasSubstr;

constexpr char kManifest[] = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3
)";

class RemoteCommandsTest : public ::testing::Test {
 protected:
  RemoteCommandsTest() {
    env_.out = &out_;
    env_.err = &err_;
    env_.read_input = [](const std::string& path) -> absl::StatusOr<std::string> {
      if (path == "good.yaml") return std::string(kManifest);
      if (path == "bad.yaml") return std::string("apiVersion: kubeflow.org/v1\nkind: Nope\n");
      return absl::NotFoundError(path + ": No such file or directory");
    };
    env_.load_jobs = [](const std::string& text,
                        const std::string& namespace_) -> absl::StatusOr<std::vector<TrainingJob>> {
      absl::StatusOr<std::vector<TrainingJob>> jobs = api::v1::codec::ParseManifests(text);
      if (!jobs.ok()) return jobs.status();
      for (TrainingJob& job : *jobs) {
        if (job.metadata().namespace_().empty()) job.mutable_metadata()->set_namespace_(namespace_);
      }
      return jobs;
    };
    env_.make_client =
        [this](
            const sdk::ConnectionOptions&) -> absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> {
      sdk::ClientConfig config;
      config.server = server_.address();
      config.poll_interval = absl::Milliseconds(20);
      return std::make_unique<sdk::TrainingClient>(
          grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials()), config);
    };
    env_.now = [] { return absl::FromUnixSeconds(100000); };
  }

  static TrainingJob Job(const std::string& namespace_, const std::string& name,
                         std::vector<std::string> conditions, int64_t created = 100000 - 300) {
    TrainingJob job = JobWithConditions(namespace_, name, conditions, "boom");
    job.mutable_metadata()->mutable_creation_timestamp()->set_seconds(created);
    (*job.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(2);
    (*job.mutable_status()->mutable_replica_statuses())["Worker"].set_active(2);
    return job;
  }

  // Gives the stored job default/`name` the status Job() writes, as the controller would.
  void SetStatus(const std::string& name, std::vector<std::string> conditions) {
    server_.SetStatus("default", name, Job("default", name, std::move(conditions)).status());
  }

  // Talks to history_ instead of server_: kept logs and the histories of deleted jobs.
  void UseHistoryServer() {
    env_.make_client =
        [this](
            const sdk::ConnectionOptions&) -> absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> {
      sdk::ClientConfig config;
      config.server = history_.address();
      return std::make_unique<sdk::TrainingClient>(
          grpc::CreateChannel(history_.address(), grpc::InsecureChannelCredentials()), config);
    };
  }

  std::vector<api::v1::ListJobsRequest> ListRequests() {
    return server_.recorder().Requests<api::v1::ListJobsRequest>("ListJobs");
  }
  std::vector<api::v1::CreateJobRequest> CreateRequests() {
    return server_.recorder().Requests<api::v1::CreateJobRequest>("CreateJob");
  }

  InMemoryServer server_;
  FakeHistoryServer history_;
  std::ostringstream out_;
  std::ostringstream err_;
  RemoteEnv env_;
  RemoteOptions options_;
};

JobAttempt Attempt(int number, int64_t start, std::optional<int64_t> end, const std::string& reason,
                   const std::map<std::string, std::string>& nodes) {
  JobAttempt attempt;
  attempt.set_attempt(number);
  attempt.mutable_start_time()->set_seconds(start);
  if (end.has_value()) attempt.mutable_end_time()->set_seconds(*end);
  attempt.set_reason(reason);
  attempt.mutable_nodes()->insert(nodes.begin(), nodes.end());
  return attempt;
}

// Three attempts: an OOM kill that spent the budget, a lost node that did not (its replicas
// spread over five nodes), and the one running now, whose step is the job's latest report.
TrainingJob JobWithThreeAttempts(const std::string& name) {
  TrainingJob job = JobWithConditions("default", name, {"Created", "Running"}, "");
  job.mutable_metadata()->set_uid("uid-" + name);
  job.mutable_metadata()->mutable_creation_timestamp()->set_seconds(100000 - 7300);
  job.mutable_status()->mutable_start_time()->set_seconds(100000 - 7200);
  api::v1::CoachJobStatus* coach = job.mutable_status()->mutable_coach();
  coach->set_attempt(2);
  coach->set_restarts(1);
  coach->set_disruptions(1);
  JobAttempt* oom = coach->add_attempts();
  *oom = Attempt(0, 100000 - 7200, 100000 - 5400, "OOMKilled",
                 {{"master-0", "node-a"}, {"worker-0", "node-a"}, {"worker-1", "node-b"}});
  oom->set_replica("worker-1");
  oom->set_exit_code(137);
  oom->set_signal("SIGKILL");
  oom->set_last_step(1200);
  oom->set_steps_lost(200);
  oom->set_counted(true);
  oom->set_message("worker-1 was OOMKilled (exit code 137)");
  JobAttempt* lost = coach->add_attempts();
  *lost = Attempt(1, 100000 - 5390, 100000 - 1800, "NodeLost",
                  {{"master-0", "node-c"},
                   {"worker-0", "node-d"},
                   {"worker-1", "node-e"},
                   {"worker-2", "node-f"},
                   {"worker-3", "node-g"},
                   {"worker-4", "node-c"}});
  lost->set_replica("worker-0");
  lost->set_last_step(2500);
  lost->set_steps_lost(0);
  lost->set_message("node node-d was lost");
  *coach->add_attempts() =
      Attempt(2, 100000 - 1790, std::nullopt, "", {{"master-0", "node-h"}, {"worker-0", "node-h"}});
  coach->mutable_progress()->set_step(3100);
  coach->mutable_progress()->mutable_last_progress_time()->set_seconds(100000 - 10);
  return job;
}

constexpr char kThreeAttempts[] =
    "ATTEMPT   START                  END                    DURATION   REASON      REPLICA    "
    "EXIT          NODES                   LAST STEP   LOST   COUNTED\n"
    "0         1970-01-02T01:46:40Z   1970-01-02T02:16:40Z   30m        OOMKilled   worker-1   "
    "137 SIGKILL   node-a,node-b           1200        200    yes\n"
    "1         1970-01-02T02:16:50Z   1970-01-02T03:16:40Z   59m50s     NodeLost    worker-0   "
    "-             node-c,node-d +3 more   2500        0      no\n"
    "2         1970-01-02T03:16:50Z   running                29m50s     -           -          "
    "-             node-h                  3100        -      -\n"
    "attempt 0: worker-1 was OOMKilled (exit code 137)\n"
    "attempt 1: node node-d was lost\n";

TEST(FormatSpanTest, TwoLargestUnits) {
  EXPECT_EQ(FormatSpan(absl::Seconds(-3)), "0s");
  EXPECT_EQ(FormatSpan(absl::Seconds(45)), "45s");
  EXPECT_EQ(FormatSpan(absl::Seconds(312)), "5m12s");
  EXPECT_EQ(FormatSpan(absl::Minutes(30)), "30m");
  EXPECT_EQ(FormatSpan(absl::Minutes(125)), "2h5m");
  EXPECT_EQ(FormatSpan(absl::Hours(76) + absl::Seconds(5)), "3d4h");
}

TEST(ExitCodeTest, StatusCodesMapToDocumentedExitCodes) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), kExitOk);
  EXPECT_EQ(ExitCodeFor(absl::InvalidArgumentError("")), kExitInvalid);
  EXPECT_EQ(ExitCodeFor(absl::AlreadyExistsError("")), kExitInvalid);
  EXPECT_EQ(ExitCodeFor(absl::NotFoundError("")), kExitNotFound);
  EXPECT_EQ(ExitCodeFor(absl::DeadlineExceededError("")), kExitTimeout);
  EXPECT_EQ(ExitCodeFor(absl::UnavailableError("")), kExitUnavailable);
  EXPECT_EQ(ExitCodeFor(absl::UnauthenticatedError("")), kExitUnauthorized);
  EXPECT_EQ(ExitCodeFor(absl::PermissionDeniedError("")), kExitUnauthorized);
  EXPECT_EQ(ExitCodeFor(absl::InternalError("")), kExitServerError);
}

TEST(ParseTimeoutTest, Forms) {
  EXPECT_EQ(*ParseTimeout("10m"), absl::Minutes(10));
  EXPECT_EQ(*ParseTimeout("1h30m"), absl::Minutes(90));
  EXPECT_EQ(*ParseTimeout("45"), absl::Seconds(45));
  EXPECT_FALSE(ParseTimeout("soon").ok());
  EXPECT_FALSE(ParseTimeout("0s").ok());
  EXPECT_FALSE(ParseTimeout("-5m").ok());
}

TEST_F(RemoteCommandsTest, ListPrintsATable) {
  server_.AddJob(Job("default", "mnist", {"Created", "Running"}));
  server_.AddJob(Job("default", "bert", {"Created"}, 100000 - 7200));
  server_.AddJob(Job("other", "x", {}));
  EXPECT_EQ(RunList(options_, env_), kExitOk);
  EXPECT_EQ(out_.str(),
            "NAME    KIND         STATE     REPLICAS   AGE   STEP   LAST-PROGRESS   MESSAGE\n"
            "bert    PyTorchJob   Created   2/2        2h    -      -               boom\n"
            "mnist   PyTorchJob   Running   2/2        5m    -      -\n");
  EXPECT_EQ(ListRequests()[0].namespace_(), "default");
}

TEST_F(RemoteCommandsTest, ListAllNamespacesWithSelector) {
  server_.AddJob(Job("other", "x", {"Succeeded"}));
  options_.all_namespaces = true;
  options_.selector = "team=nlp";
  EXPECT_EQ(RunList(options_, env_), kExitOk);
  EXPECT_EQ(ListRequests()[0].namespace_(), "");
  EXPECT_EQ(ListRequests()[0].label_selector(), "team=nlp");
  EXPECT_THAT(err_.str(), HasSubstr("No jobs found"));
}

TEST_F(RemoteCommandsTest, ListAsJsonUsesTheCodec) {
  server_.AddJob(Job("default", "mnist", {"Created"}));
  options_.output = "json";
  EXPECT_EQ(RunList(options_, env_), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\"kind\": \"PyTorchJob\""));
}

// A job that reports progress: its step and how long ago it reported, as `kubectl get` shows
// them from the CRD's printer columns.
TEST_F(RemoteCommandsTest, GetShowsTheProgress) {
  TrainingJob job = Job("default", "mnist", {"Created", "Running"});
  api::v1::JobProgress* progress = job.mutable_status()->mutable_coach()->mutable_progress();
  progress->set_step(1200);
  progress->mutable_last_progress_time()->set_seconds(100000 - 12);
  server_.AddJob(job);
  options_.job = "mnist";
  EXPECT_EQ(RunGet(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "NAME    KIND         STATE     REPLICAS   AGE   STEP   LAST-PROGRESS   MESSAGE\n"
            "mnist   PyTorchJob   Running   2/2        5m    1200   12s\n");
}

TEST_F(RemoteCommandsTest, GetAsYamlShowsCoachStatus) {
  TrainingJob job = Job("default", "mnist", {"Created", "Running"});
  job.mutable_status()->mutable_coach()->set_attempt(1);
  (*job.mutable_status()->mutable_coach()->mutable_progress()->mutable_metrics())["loss"] = 0.25;
  server_.AddJob(job);
  options_.job = "mnist";
  options_.output = "yaml";
  EXPECT_EQ(RunGet(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("  coach:\n"
                                    "    attempt: 1\n"
                                    "    progress:\n"
                                    "      metrics:\n"
                                    "        loss: 0.25\n"));
}

TEST_F(RemoteCommandsTest, GetAsYaml) {
  server_.AddJob(Job("default", "mnist", {"Created"}));
  options_.job = "mnist";
  options_.output = "yaml";
  EXPECT_EQ(RunGet(options_, env_), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("name: mnist"));
}

// A record no manifest could give (a store written by hand, or by an older server): encoding it
// must not throw, which would abort `coach get -o yaml` and `coach list -o yaml` for everyone.
TEST_F(RemoteCommandsTest, AJobThatIsNoManifestIsAnErrorNotACrash) {
  TrainingJob bad = Job("default", "bad", {"Created"});
  bad.mutable_metadata()->set_extra_json("[1,2]");
  server_.AddJob(bad);
  server_.AddJob(Job("default", "good", {"Created"}));
  for (const char* output : {"yaml", "json"}) {
    SCOPED_TRACE(output);
    options_.output = output;
    options_.job = "bad";
    out_.str("");
    err_.str("");
    EXPECT_EQ(RunGet(options_, env_), kExitServerError);
    EXPECT_EQ(out_.str(), "");
    EXPECT_THAT(err_.str(), HasSubstr("PyTorchJob default/bad"));
    EXPECT_THAT(err_.str(), HasSubstr("metadata.extra_json: must be a JSON object"));

    out_.str("");
    err_.str("");
    EXPECT_EQ(RunList(options_, env_), kExitServerError);
    EXPECT_THAT(out_.str(), HasSubstr("good"));
    EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("bad")));
    EXPECT_THAT(err_.str(), HasSubstr("PyTorchJob default/bad"));
  }
}

TEST_F(RemoteCommandsTest, GetErrorsMapToExitCodes) {
  options_.job = "nope";
  EXPECT_EQ(RunGet(options_, env_), kExitNotFound);
  EXPECT_THAT(err_.str(), HasSubstr("not found"));
  server_.store().InjectError("Get", absl::UnauthenticatedError("no"));
  EXPECT_EQ(RunGet(options_, env_), kExitUnauthorized);
  server_.store().InjectError("Get", absl::UnavailableError("down"));
  EXPECT_EQ(RunGet(options_, env_), kExitUnavailable);
}

TEST_F(RemoteCommandsTest, UnreachableServerIsExit6) {
  env_.make_client =
      [](const sdk::ConnectionOptions&) -> absl::StatusOr<std::unique_ptr<sdk::TrainingClient>> {
    sdk::ClientConfig config;
    config.server = "127.0.0.1:1";
    return std::make_unique<sdk::TrainingClient>(
        grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()), config);
  };
  options_.job = "x";
  EXPECT_EQ(RunDelete(options_, env_), kExitUnavailable);
  EXPECT_THAT(err_.str(), HasSubstr("127.0.0.1:1"));
}

TEST_F(RemoteCommandsTest, SubmitRejectsAnInvalidManifestLocally) {
  options_.file = "bad.yaml";
  EXPECT_EQ(RunSubmit(options_, env_), kExitInvalid);
  EXPECT_TRUE(server_.recorder().calls().empty());
  options_.file = "missing.yaml";
  EXPECT_EQ(RunSubmit(options_, env_), kExitInvalid);
  EXPECT_THAT(err_.str(), HasSubstr("missing.yaml"));
}

TEST_F(RemoteCommandsTest, SubmitSendsTheManifest) {
  options_.file = "good.yaml";
  options_.namespace_ = "ml";
  options_.namespace_given = true;
  EXPECT_EQ(RunSubmit(options_, env_), kExitOk);
  ASSERT_EQ(CreateRequests().size(), 1u);
  EXPECT_EQ(CreateRequests()[0].manifest(), kManifest);
  EXPECT_EQ(CreateRequests()[0].namespace_(), "ml");
  EXPECT_EQ(out_.str(), "PyTorchJob ml/mnist created\n");
}

// Without -n the manifest's own namespace (or the server's default) decides, as with kubectl.
TEST_F(RemoteCommandsTest, SubmitWithoutNamespaceFlagLeavesItToTheManifest) {
  options_.file = "good.yaml";
  std::string seen = "unset";
  env_.load_jobs = [&seen](const std::string& text, const std::string& namespace_) {
    seen = namespace_;
    return api::v1::codec::ParseManifests(text);
  };
  EXPECT_EQ(RunSubmit(options_, env_), kExitOk);
  EXPECT_EQ(seen, "");
  ASSERT_EQ(CreateRequests().size(), 1u);
  EXPECT_EQ(CreateRequests()[0].namespace_(), "");
}

TEST_F(RemoteCommandsTest, SubmitAlreadyExistsIsInvalid) {
  server_.AddJob(Job("default", "mnist", {}));
  options_.file = "good.yaml";
  EXPECT_EQ(RunSubmit(options_, env_), kExitInvalid);
}

TEST_F(RemoteCommandsTest, SubmitWaitSucceeds) {
  server_.WhenWatched([this] {
    SetStatus("mnist", {"Created", "Running"});
    SetStatus("mnist", {"Created", "Succeeded"});
  });
  options_.file = "good.yaml";
  options_.wait = true;
  EXPECT_EQ(RunSubmit(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("default/mnist Running: "));
  EXPECT_THAT(out_.str(), HasSubstr("PyTorchJob default/mnist Succeeded\n"));
}

TEST_F(RemoteCommandsTest, SubmitWaitReportsFailure) {
  server_.WhenWatched([this] { SetStatus("mnist", {"Created", "Failed"}); });
  options_.file = "good.yaml";
  options_.wait = true;
  EXPECT_EQ(RunSubmit(options_, env_), kExitJobFailed);
  EXPECT_THAT(err_.str(), HasSubstr("boom"));
}

TEST_F(RemoteCommandsTest, WaitTimesOut) {
  server_.AddJob(Job("default", "mnist", {"Created"}));
  options_.job = "mnist";
  options_.for_condition = "Succeeded";
  options_.timeout = "0.2s";
  EXPECT_EQ(RunWait(options_, env_), kExitTimeout);
  EXPECT_THAT(err_.str(), HasSubstr("timed out"));
}

TEST_F(RemoteCommandsTest, WaitForFailedIsReachedWhenTheJobFails) {
  server_.AddJob(Job("default", "mnist", {"Created", "Failed"}));
  options_.job = "mnist";
  options_.for_condition = "Failed";
  EXPECT_EQ(RunWait(options_, env_), kExitOk);
  options_.for_condition = "Running";
  EXPECT_EQ(RunWait(options_, env_), kExitJobFailed);
}

TEST_F(RemoteCommandsTest, WaitRejectsBadArguments) {
  options_.job = "mnist";
  options_.for_condition = "Done";
  EXPECT_EQ(RunWait(options_, env_), kExitUsage);
  options_.for_condition = "Running";
  options_.timeout = "later";
  EXPECT_EQ(RunWait(options_, env_), kExitUsage);
  EXPECT_TRUE(server_.recorder().calls().empty());
}

TEST_F(RemoteCommandsTest, DescribeShowsConditionsReplicasAndEvents) {
  server_.AddJob(Job("default", "mnist", {"Created", "Running"}));
  model::ObservedPod replica;
  replica.name = "worker-0";
  replica.replica_type = "Worker";
  replica.phase = model::PodPhase::kFailed;
  replica.restart_count = 2;
  replica.exit_code = 137;
  server_.backend().SetPod("default", "mnist", replica);
  ASSERT_TRUE(
      server_.store()
          .AppendEvent({"default", "mnist"}, {"Warning", "Restarting", "worker-0 exited 137",
                                              absl::FromUnixSeconds(100000 - 30)})
          .ok());
  options_.job = "mnist";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk);
  std::string text = out_.str();
  EXPECT_THAT(text, HasSubstr("Name:        mnist\n"));
  EXPECT_THAT(text, HasSubstr("State:       Running\n"));
  EXPECT_THAT(text, HasSubstr("Conditions:\n  TYPE"));
  EXPECT_THAT(text, HasSubstr("worker-0   Worker   Failed   2          137"));
  EXPECT_THAT(text, HasSubstr("Warning   Restarting   30s   worker-0 exited 137"));
  // No status.coach: neither of its sections.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("Recovery:")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("Progress:")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("Elastic:")));
}

TEST_F(RemoteCommandsTest, DescribeShowsRecoveryAndProgress) {
  TrainingJob job = Job("default", "mnist", {"Created", "Running"});
  auto& annotations = *job.mutable_metadata()->mutable_annotations();
  annotations["coach.dev/restart-scope"] = "Job";
  annotations["coach.dev/max-restarts"] = "3";
  annotations["coach.dev/max-restarts-worker"] = "2";
  job.mutable_spec()->mutable_run_policy()->set_backoff_limit(10);
  api::v1::CoachJobStatus* coach = job.mutable_status()->mutable_coach();
  coach->set_attempt(2);
  coach->set_restarts(1);
  coach->set_disruptions(1);
  (*coach->mutable_restarts_by_type())["Worker"] = 1;
  (*coach->mutable_restarts_by_type())["Master"] = 0;
  coach->mutable_attempt_running_time()->set_seconds(100000 - 300);
  api::v1::JobProgress* progress = coach->mutable_progress();
  progress->set_step(1200);
  progress->set_steps_per_second(3.5);
  progress->mutable_last_progress_time()->set_seconds(100000 - 12);
  (*progress->mutable_metrics())["loss"] = 0.25;
  (*progress->mutable_metrics())["accuracy"] = 0.9125;
  server_.AddJob(job);
  options_.job = "mnist";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("Recovery:\n"
                                    "  Attempt:          2, running since 1970-01-02T03:41:40Z "
                                    "(5m ago)\n"
                                    "  Restarts:         1 of 3\n"
                                    "  Disruptions:      1\n"
                                    "  Restarts by type: Master=0, Worker=1 of 2\n"
                                    "Progress:\n"
                                    "  Step:             1200\n"
                                    "  Steps/s:          3.5\n"
                                    "  Last progress:    1970-01-02T03:46:28Z (12s ago)\n"
                                    "  Metrics:\n"
                                    "    accuracy=0.9125\n"
                                    "    loss=0.25\n"));

  // Without coach.dev/max-restarts the budget is backoffLimit; progress alone is no recovery.
  annotations.erase("coach.dev/max-restarts");
  TrainingJob progress_only = Job("default", "progress-only", {"Created", "Running"});
  progress_only.mutable_status()->mutable_coach()->mutable_progress()->set_step(5);
  server_.AddJob(progress_only);
  job.mutable_metadata()->set_name("backoff");
  server_.AddJob(job);
  out_.str("");
  options_.job = "backoff";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("  Restarts:         1 of 10\n"));

  // Restarts in place: how many, and when the last restart was asked for.
  annotations["coach.dev/restart-mode"] = "InPlace";
  coach->set_in_place_restarts(1);
  coach->mutable_restart_time()->set_seconds(100000 - 320);
  job.mutable_metadata()->set_name("in-place");
  server_.AddJob(job);
  out_.str("");
  options_.job = "in-place";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("  Restarts by type: Master=0, Worker=1 of 2\n"
                                    "  In place:         1 (ranks restarted inside their pods)\n"
                                    "  Last restart:     1970-01-02T03:41:20Z (5m ago)\n"));
  out_.str("");
  options_.job = "progress-only";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("Recovery:")));
  EXPECT_THAT(out_.str(), HasSubstr("Progress:\n"
                                    "  Step:             5\n"
                                    "  Steps/s:          -\n"
                                    "  Last progress:    -\n"
                                    "Events:"));
}

TEST_F(RemoteCommandsTest, DescribeListsTheJobsMlflowRuns) {
  TrainingJob job = Job("default", "tracked", {"Created", "Succeeded"});
  (*job.mutable_metadata()->mutable_annotations())["coach.dev/mlflow-runs"] =
      R"([{"replica":"job","run_id":"a","url":"http://ml/#/experiments/1/runs/a"},)"
      R"({"replica":"worker-0 rank 1","run_id":"b","url":"http://ml/#/experiments/2/runs/b"}])";
  server_.AddJob(job);
  options_.job = "tracked";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("MLflow Runs:\n"
                                    "  WHO               URL\n"
                                    "  job               http://ml/#/experiments/1/runs/a\n"
                                    "  worker-0 rank 1   http://ml/#/experiments/2/runs/b\n"));
}

TEST_F(RemoteCommandsTest, LogsWriteTheBytes) {
  server_.AddJob(Job("default", "mnist", {}));
  server_.backend().SetLog("master-0", "step 1\nstep 2\n");
  options_.job = "mnist";
  options_.replica = "master-0";
  options_.tail = 5;
  EXPECT_EQ(RunLogs(options_, env_), kExitOk);
  EXPECT_EQ(out_.str(), "step 1\nstep 2\n");
  EXPECT_EQ(server_.recorder().Requests<api::v1::GetJobLogsRequest>("GetJobLogs")[0].tail_lines(),
            5);
}

TEST_F(RemoteCommandsTest, DeleteSuspendResume) {
  server_.AddJob(Job("default", "mnist", {}));
  options_.job = "mnist";
  EXPECT_EQ(RunSuspend(options_, env_), kExitOk);
  EXPECT_EQ(RunResume(options_, env_), kExitOk);
  EXPECT_EQ(RunDelete(options_, env_), kExitOk);
  EXPECT_EQ(RunDelete(options_, env_), kExitNotFound);
  EXPECT_THAT(out_.str(), HasSubstr("PyTorchJob default/mnist suspended\n"));
  EXPECT_THAT(out_.str(), HasSubstr("PyTorchJob default/mnist resumed\n"));
  EXPECT_THAT(out_.str(), HasSubstr("job default/mnist deleted\n"));
}

TEST_F(RemoteCommandsTest, HistoryShowsTheAttemptTimeline) {
  server_.AddJob(JobWithThreeAttempts("mnist"));
  options_.job = "mnist";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), kThreeAttempts);
  EXPECT_EQ(err_.str(), "");
}

// The status keeps the first attempt and the latest ones: the attempts it let go show as one
// row, so that numbers that jump are not read as attempts that never ran.
TEST_F(RemoteCommandsTest, HistoryShowsTheAttemptsNoLongerKept) {
  TrainingJob job = JobWithConditions("default", "long", {"Created", "Failed"}, "");
  api::v1::CoachJobStatus* coach = job.mutable_status()->mutable_coach();
  *coach->add_attempts() = Attempt(0, 1000, 1060, "Failed", {});
  *coach->add_attempts() = Attempt(5, 2000, 2045, "Stalled", {});
  *coach->add_attempts() = Attempt(7, 3000, 3005, "BackoffLimitExceeded", {});
  coach->mutable_attempts(2)->set_exit_code(1);
  server_.AddJob(job);
  options_.job = "long";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(
      out_.str(),
      "ATTEMPT   START                  END                    DURATION   REASON              "
      "   REPLICA   EXIT   NODES   LAST STEP   LOST   COUNTED\n"
      "0         1970-01-01T00:16:40Z   1970-01-01T00:17:40Z   1m         Failed              "
      "   -         -      -       -           -      no\n"
      "1-4       (not kept)\n"
      "5         1970-01-01T00:33:20Z   1970-01-01T00:34:05Z   45s        Stalled             "
      "   -         -      -       -           -      no\n"
      "6         (not kept)\n"
      "7         1970-01-01T00:50:00Z   1970-01-01T00:50:05Z   5s         "
      "BackoffLimitExceeded   -         1      -       -           -      no\n");
}

TEST_F(RemoteCommandsTest, HistoryOfAJobWithoutAttempts) {
  server_.AddJob(Job("default", "mnist", {"Created"}));
  options_.job = "mnist";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "No attempts recorded for PyTorchJob default/mnist.\n");
  options_.job = "nope";
  EXPECT_EQ(RunHistory(options_, env_), kExitNotFound);
}

TEST_F(RemoteCommandsTest, HistoryAsJsonHasTheManifestsAttempts) {
  server_.AddJob(JobWithThreeAttempts("mnist"));
  options_.job = "mnist";
  options_.output = "json";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  const nlohmann::json history = nlohmann::json::parse(out_.str());
  EXPECT_EQ(history["name"], "mnist");
  EXPECT_EQ(history["uid"], server_.jobs().Get("default", "mnist")->metadata().uid());
  ASSERT_EQ(history["attempts"].size(), 3u);
  EXPECT_EQ(history["attempts"][0]["exitCode"], 137);
  EXPECT_EQ(history["attempts"][0]["signal"], "SIGKILL");
  EXPECT_EQ(history["attempts"][0]["startTime"], "1970-01-02T01:46:40Z");
  EXPECT_FALSE(history["attempts"][2].contains("endTime"));

  out_.str("");
  options_.output = "yaml";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("attempts:\n- attempt: 0\n"));
}

TEST_F(RemoteCommandsTest, HistoryWantsAJobOrDeleted) {
  EXPECT_EQ(RunHistory(options_, env_), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("JOB is required"));
  EXPECT_TRUE(server_.recorder().calls().empty());
}

TEST_F(RemoteCommandsTest, DescribeShowsTheAttemptTimeline) {
  server_.AddJob(JobWithThreeAttempts("mnist"));
  options_.job = "mnist";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  std::string indented = "Attempts:\n";
  for (absl::string_view line : absl::StrSplit(kThreeAttempts, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&indented, "  ", line, "\n");
  }
  EXPECT_THAT(out_.str(), HasSubstr("  Disruptions:      1\n" + indented + "Progress:\n"));
}

// An elastic job lost a Worker, got it back, and lost one again: one row per change, before
// the progress.
TEST_F(RemoteCommandsTest, DescribeShowsTheElasticWorkers) {
  TrainingJob job = Job("default", "elastic", {"Created", "Running"});
  api::v1::ElasticStatus* elastic = job.mutable_status()->mutable_coach()->mutable_elastic();
  elastic->set_min_workers(2);
  elastic->set_max_workers(3);
  elastic->set_workers(2);
  const auto change = [&](int64_t ago, int workers, int64_t step, const std::string& why) {
    api::v1::WorkerCountChange* c = elastic->add_changes();
    c->mutable_time()->set_seconds(100000 - ago);
    c->set_workers(workers);
    c->set_step(step);
    c->set_why(why);
  };
  change(600, 2, 1500, "Worker replica 1 exited with code 137");
  change(300, 3, 1580, "Worker replica 1 runs");
  change(45, 2, 0, "Worker replica 2 was evicted");
  job.mutable_status()->mutable_coach()->mutable_progress()->set_step(1700);
  server_.AddJob(job);
  options_.job = "elastic";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(),
              HasSubstr("Elastic:\n"
                        "  Workers:          2 of 2..3 running\n"
                        "  CHANGED                AGE   WORKERS   STEP   WHY\n"
                        "  1970-01-02T03:36:40Z   10m   2         1500   "
                        "Worker replica 1 exited with code 137\n"
                        "  1970-01-02T03:41:40Z   5m    3         1580   Worker replica 1 runs\n"
                        "  1970-01-02T03:45:55Z   45s   2         -      "
                        "Worker replica 2 was evicted\n"
                        "Progress:\n"));

  // No change yet: the count alone. A change without a time or a reason shows "-".
  elastic->set_workers(3);
  elastic->clear_changes();
  job.mutable_metadata()->set_name("steady");
  server_.AddJob(job);
  out_.str("");
  options_.job = "steady";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("Elastic:\n"
                                    "  Workers:          3 of 2..3 running\n"
                                    "Progress:\n"));
  elastic->add_changes()->set_workers(3);
  job.mutable_metadata()->set_name("untimed");
  server_.AddJob(job);
  out_.str("");
  options_.job = "untimed";
  EXPECT_EQ(RunDescribe(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("  CHANGED   AGE   WORKERS   STEP   WHY\n"
                                    "  -         -     3         -      -\n"
                                    "Progress:\n"));
}

TEST_F(RemoteCommandsTest, LogsRefuseABadAttempt) {
  options_.job = "mnist";
  for (const char* attempt : {"-1", "abc", "1.5", "+1", "1000001", "99999999999"}) {
    SCOPED_TRACE(attempt);
    err_.str("");
    options_.attempt = attempt;
    EXPECT_EQ(RunLogs(options_, env_), kExitUsage);
    EXPECT_EQ(err_.str(), absl::StrCat("error: --attempt: must be a whole number from 0 to "
                                       "1000000, got \"",
                                       attempt, "\"\n"));
  }
  EXPECT_TRUE(server_.recorder().calls().empty());
}

// Bytes that are not the live replica's get a line on stderr saying where they were kept,
// before the replica's first bytes; stdout holds the log alone.
TEST_F(RemoteCommandsTest, LogsSayWhereKeptBytesComeFrom) {
  UseHistoryServer();
  history_.AddLogChunk("worker-0", "w0 step 1\n", 1, "kept/store");
  history_.AddLogChunk("worker-1", "w1 step 1\n", 1, "kept/mlflow");
  history_.AddLogChunk("worker-0", "w0 step 2\n", 1);
  history_.AddLogChunk("master-0", "m0 step 1\n", 1, "kept/local");
  options_.job = "mnist";
  options_.attempt = "1";
  EXPECT_EQ(RunLogs(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "w0 step 1\nw1 step 1\nw0 step 2\nm0 step 1\n");
  EXPECT_EQ(err_.str(),
            "# worker-0, attempt 1: kept log (store)\n"
            "# worker-1, attempt 1: kept log (mlflow)\n"
            "# master-0, attempt 1: kept log (local)\n");
  std::vector<api::v1::GetJobLogsRequest> requests = history_.log_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].has_attempt());
  EXPECT_EQ(requests[0].attempt(), 1);
  EXPECT_EQ(requests[0].uid(), "");
}

TEST_F(RemoteCommandsTest, LogsOfLiveReplicasAndOfADeletedJob) {
  UseHistoryServer();
  history_.AddLogChunk("worker-0", "live bytes\n", 2, "live");
  options_.job = "mnist";
  EXPECT_EQ(RunLogs(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "live bytes\n");
  EXPECT_EQ(err_.str(), "");
  EXPECT_FALSE(history_.log_requests()[0].has_attempt());

  options_.uid = "uid-1";
  EXPECT_EQ(RunLogs(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(history_.log_requests()[1].uid(), "uid-1");
}

// An operator that predates --attempt would send the current attempt's log as if it were the
// one asked for.
TEST_F(RemoteCommandsTest, LogsOfAnEarlierAttemptFromAnOlderOperator) {
  UseHistoryServer();
  history_.AddLogChunk("worker-0", "current\n", 0);
  options_.job = "mnist";
  options_.attempt = "0";
  EXPECT_EQ(RunLogs(options_, env_), kExitServerError);
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(err_.str(), HasSubstr("predates them"));
}

api::v1::JobHistory History(const std::string& namespace_, const std::string& name,
                            const std::string& uid, int64_t deleted, const std::string& by,
                            const std::string& result) {
  api::v1::JobHistory history;
  *history.mutable_job() = JobWithConditions(namespace_, name, {"Created", result}, "");
  history.mutable_job()->mutable_metadata()->set_uid(uid);
  history.mutable_job()->mutable_status()->mutable_start_time()->set_seconds(deleted - 3600);
  history.mutable_deleted_time()->set_seconds(deleted);
  history.set_deleted_by(by);
  history.add_logs("attempt-0/worker-0");
  return history;
}

TEST_F(RemoteCommandsTest, HistoryDeletedListsTheKeptHistories) {
  UseHistoryServer();
  api::v1::JobHistory restarted =
      History("default", "mnist", "u1", 100000 - 600, "ttl", "Succeeded");
  *restarted.mutable_job()->mutable_status() = JobWithThreeAttempts("mnist").status();
  restarted.mutable_job()->mutable_status()->mutable_conditions(1)->set_type("Succeeded");
  restarted.add_logs("attempt-1/worker-0");
  restarted.add_logs("attempt-2/worker-0");
  history_.AddHistory(restarted);
  history_.AddHistory(History("default", "mnist", "u0", 100000 - 90000, "deleted", "Failed"));
  history_.AddHistory(History("default", "bert", "u2", 100000 - 30, "deleted", "Running"));
  history_.AddHistory(History("team-a", "gpt", "u3", 100000 - 7200, "ttl", "Succeeded"));
  options_.deleted = true;
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "NAMESPACE   NAME    UID   DELETED   BY        RESULT      ATTEMPTS   LOGS\n"
            "default     bert    u2    30s       deleted   Running     1          1\n"
            "default     mnist   u1    10m       ttl       Succeeded   3          3\n"
            "default     mnist   u0    1d        deleted   Failed      1          1\n");
  auto requests = [this] { return history_.history_requests(); };
  EXPECT_EQ(requests()[0].namespace_(), "default");
  EXPECT_EQ(requests()[0].name(), "");

  out_.str("");
  options_.all_namespaces = true;
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("team-a      gpt     u3    2h        ttl       Succeeded"));
  EXPECT_EQ(requests()[1].namespace_(), "");
  options_.all_namespaces = false;

  // Two deleted jobs of that name: the list, and how to pick one.
  out_.str("");
  options_.job = "mnist";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("u1"));
  EXPECT_THAT(out_.str(), HasSubstr("u0"));
  EXPECT_EQ(err_.str(), "# 2 deleted jobs named mnist were kept: --uid UID shows one's attempts\n");
  EXPECT_EQ(requests()[2].name(), "mnist");

  // --uid: its timeline, measured to the deletion.
  out_.str("");
  err_.str("");
  options_.uid = "u1";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("2         1970-01-02T03:16:50Z   -                      "
                                    "19m50s     -           -          -             node-h"));
  EXPECT_THAT(out_.str(), HasSubstr("attempt 1: node node-d was lost\n"));
  EXPECT_EQ(requests()[3].page_size(), 1000);

  // Only one of that name: its timeline without --uid.
  out_.str("");
  options_.uid = "";
  options_.job = "bert";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(), "No attempts recorded for PyTorchJob default/bert.\n");

  err_.str("");
  options_.uid = "u9";
  EXPECT_EQ(RunHistory(options_, env_), kExitNotFound);
  EXPECT_EQ(err_.str(), "error: no kept history of a deleted job default/bert with uid u9\n");
  options_.uid = "";
  options_.job = "nope";
  EXPECT_EQ(RunHistory(options_, env_), kExitNotFound);

  // --uid alone: that deleted job of the namespace, whatever its name.
  out_.str("");
  options_.job = "";
  options_.deleted = false;
  options_.uid = "u1";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("attempt 0: worker-1 was OOMKilled (exit code 137)\n"));
  err_.str("");
  options_.all_namespaces = true;
  options_.uid = "u9";
  EXPECT_EQ(RunHistory(options_, env_), kExitNotFound);
  EXPECT_EQ(err_.str(), "error: no kept history of a deleted job in any namespace with uid u9\n");
}

TEST_F(RemoteCommandsTest, HistoryDeletedAsJson) {
  UseHistoryServer();
  history_.AddHistory(History("default", "mnist", "u1", 100000 - 600, "ttl", "Succeeded"));
  options_.deleted = true;
  options_.output = "json";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  const nlohmann::json list = nlohmann::json::parse(out_.str());
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["uid"], "u1");
  EXPECT_EQ(list[0]["deletedBy"], "ttl");
  EXPECT_EQ(list[0]["deletedTime"], "1970-01-02T03:36:40Z");
  EXPECT_EQ(list[0]["result"], "Succeeded");
  EXPECT_EQ(list[0]["logs"], nlohmann::json::array({"attempt-0/worker-0"}));
  EXPECT_EQ(list[0]["attempts"], nlohmann::json::array());

  // One deleted job of that name is still a list; one asked for by uid is the object.
  out_.str("");
  options_.job = "mnist";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_TRUE(nlohmann::json::parse(out_.str()).is_array());
  out_.str("");
  options_.uid = "u1";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();
  EXPECT_EQ(nlohmann::json::parse(out_.str())["uid"], "u1");
}

TEST_F(RemoteCommandsTest, HistoryDeletedSaysWhatTheServerCannotDo) {
  UseHistoryServer();
  options_.deleted = true;
  EXPECT_EQ(RunHistory(options_, env_), kExitOk);
  EXPECT_EQ(err_.str(), "No kept histories of deleted jobs found in default namespace.\n");

  for (int i = 0; i < 3; ++i) {
    history_.AddHistory(
        History("default", "mnist", absl::StrCat("u", i), 1000 + i, "ttl", "Succeeded"));
  }
  err_.str("");
  out_.str("");
  options_.job = "mnist";
  options_.uid = "u0";
  EXPECT_EQ(RunHistory(options_, env_), kExitOk) << err_.str();

  history_.InjectError("ListJobHistories",
                       grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                    "this operator keeps no history of deleted jobs"));
  err_.str("");
  EXPECT_EQ(RunHistory(options_, env_), kExitInvalid);
  EXPECT_THAT(err_.str(), HasSubstr("keeps no history of deleted jobs"));
  history_.InjectError("ListJobHistories", grpc::Status(grpc::StatusCode::UNIMPLEMENTED, ""));
  err_.str("");
  EXPECT_EQ(RunHistory(options_, env_), kExitServerError);
  EXPECT_THAT(err_.str(), HasSubstr("does not serve the histories of deleted jobs"));
}

}  // namespace
}  // namespace coach::cli
