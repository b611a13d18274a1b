#include "operator/tracking/mlflow_tracker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "absl/strings/match.h"
#include "operator/tracking/testing/mlflow_tracker_fixture.h"

namespace coach::tracking {
namespace {

using mlflow::RunStatus;
using mlflow::testing::FakeTrackingClient;
using testing::MlflowTrackerTest;
using Method = FakeTrackingClient::Method;
using reconcile::testing::MakePyTorchJob;

TEST_F(MlflowTrackerTest, TheCodesOwnRunsAreLinkedWhenTheJobEnds) {
  auto tracker = NewTracker();
  model::Job job = Job("l", "uid-l");
  tracker->JobSeen(Running(job));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  const mlflow::Run job_run = OnlyRun("uid-l");
  // A worker without the binding made a run tagged with the job (MLFLOW_RUN_CONTEXT); the
  // master's binding recorded a run on another server.
  mlflow::CreateRunRequest own;
  own.experiment_id = job_run.info.experiment_id;
  own.tags = {{"coach.job_uid", "uid-l"}, {"coach.replica", "worker-0"}};
  absl::StatusOr<mlflow::RunInfo> worker_run = fake_.CreateRun(own);
  ASSERT_TRUE(worker_run.ok());
  ASSERT_TRUE(fake_
                  .SetTag(job_run.info.run_id, "coach.linked_run.elsewhere",
                          R"({"experiment_id":"9","tracking_uri":"http://other:5000",)"
                          R"("replica":"master-0","rank":"0"})")
                  .ok());
  ASSERT_TRUE(fake_.SetTag(job_run.info.run_id, "coach.linked_run.junk", "not json").ok());
  tracker->JobSeen(WithRunId(Finished(job, true), job_run.info.run_id));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));

  absl::StatusOr<mlflow::Run> after = fake_.GetRun(job_run.info.run_id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->tags["coach.linked_run." + worker_run->run_id],
            absl::StrCat(R"({"experiment_id":")", job_run.info.experiment_id,
                         R"(","replica":"worker-0"})"));
  std::vector<RecordedEvent> linked = EventsWith("MlflowRunLinked");
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_EQ(
      linked[0].message,
      "master-0 rank 0 logged to MLflow run http://other:5000/#/experiments/9/runs/elsewhere");
  EXPECT_EQ(linked[1].message,
            absl::StrCat("worker-0 logged to MLflow run http://mlflow.test:5000/#/experiments/",
                         job_run.info.experiment_id, "/runs/", worker_run->run_id));
  absl::MutexLock lock(&mu_);
  const model::Json runs =
      model::Json::parse(annotations_["uid-l"][reconcile::kAnnotationMlflowRuns]);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0]["replica"], "job");
  EXPECT_EQ(runs[0]["run_id"], job_run.info.run_id);
  EXPECT_EQ(runs[1]["replica"], "master-0 rank 0");
  EXPECT_EQ(runs[2]["url"], linked[1].message.substr(linked[1].message.find("http")));
}

TEST_F(MlflowTrackerTest, RunsMadeAfterTheJobEndedAreLinkedOnTheSecondLook) {
  ::coach::FakeClock clock(absl::FromUnixSeconds(1000));
  auto tracker = NewTracker(true, &clock);
  model::Job job = Job("late", "uid-late-run");
  tracker->JobSeen(Finished(job, true));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  const mlflow::Run job_run = OnlyRun("uid-late-run");
  EXPECT_TRUE(EventsWith("MlflowRunLinked").empty());
  // A worker still running when the master ended the job makes its run now.
  mlflow::CreateRunRequest own;
  own.experiment_id = job_run.info.experiment_id;
  own.tags = {{"coach.job_uid", "uid-late-run"}, {"coach.replica", "worker-1"}};
  ASSERT_TRUE(fake_.CreateRun(own).ok());
  clock.Advance(absl::Seconds(16));
  for (int i = 0; i < 200 && EventsWith("MlflowRunLinked").empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  std::vector<RecordedEvent> linked = EventsWith("MlflowRunLinked");
  ASSERT_EQ(linked.size(), 1u);
  EXPECT_TRUE(absl::StrContains(linked[0].message, "worker-1 logged to MLflow run "))
      << linked[0].message;
  EXPECT_TRUE(absl::StrContains(linked[0].message, "(after the job ended)")) << linked[0].message;
  // A slower one still: found by the look a minute after the end.
  own.tags = {{"coach.job_uid", "uid-late-run"}, {"coach.replica", "worker-2"}};
  ASSERT_TRUE(fake_.CreateRun(own).ok());
  clock.Advance(absl::Seconds(45));
  for (int i = 0; i < 200 && EventsWith("MlflowRunLinked").size() < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  linked = EventsWith("MlflowRunLinked");
  ASSERT_EQ(linked.size(), 2u);
  EXPECT_TRUE(absl::StrContains(linked[1].message, "worker-2 logged")) << linked[1].message;
}

TEST_F(MlflowTrackerTest, OneRunWithNameTagsParamsAndAnnotation) {
  auto tracker = NewTracker();
  model::Job job = Job("j", "uid-1");
  tracker->JobSeen(job);
  tracker->JobSeen(Running(job));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-1");
  EXPECT_EQ(run.info.run_name, "ns/j");
  EXPECT_EQ(run.info.status, RunStatus::kRunning);
  EXPECT_EQ(run.tags["coach.job_uid"], "uid-1");
  EXPECT_EQ(run.tags["coach.kind"], "PyTorchJob");
  EXPECT_EQ(run.tags["coach.namespace"], "ns");
  EXPECT_EQ(run.tags["coach.backend"], "local");
  EXPECT_EQ(run.tags["coach.version"], kCoachVersion);
  EXPECT_EQ(run.tags["coach.state"], "Running");
  EXPECT_EQ(run.tags["coach.condition.Running"], "True");
  EXPECT_EQ(run.params["coach.replicas.Master"], "1");
  EXPECT_EQ(run.params["coach.replicas.Worker"], "2");
  EXPECT_EQ(run.params["coach.world_size"], "3");
  EXPECT_EQ(run.params["coach.restart_policy.Worker"], "OnFailure");
  EXPECT_EQ(run.params["coach.image.Master"], "busybox");
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(annotations_["uid-1"][reconcile::kAnnotationMlflowRunId], run.info.run_id);
  EXPECT_EQ(annotations_["uid-1"][reconcile::kAnnotationMlflowExperimentId],
            run.info.experiment_id);
  EXPECT_EQ(uris_, std::vector<std::string>{"http://mlflow.test:5000"});
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
}

TEST_F(MlflowTrackerTest, SucceededFinishesWithEndTimeAndLogs) {
  auto tracker = NewTracker();
  tracker->JobSeen(Running(Job("ok", "uid-ok")));
  tracker->JobSeen(Finished(Job("ok", "uid-ok"), true));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-ok");
  EXPECT_EQ(run.info.status, RunStatus::kFinished);
  EXPECT_EQ(run.info.end_time_ms, 200000);
  EXPECT_EQ(run.tags["coach.state"], "Succeeded");
  EXPECT_EQ(run.tags["coach.condition.Running"], "False");
  EXPECT_EQ(run.tags["coach.message"], "job succeeded");
  EXPECT_EQ(fake_.DownloadArtifact(run.info.run_id, "logs/attempt-0/master-0.log").value(),
            "log of ok master\n");
  EXPECT_EQ(fake_.DownloadArtifact(run.info.run_id, "logs/attempt-0/worker-0.log").value(),
            "log of worker\n");
  EXPECT_EQ(tracker->stats().runs_ended, 1);
  // Later passes over the finished job do nothing.
  const int updates = fake_.Calls(Method::kUpdateRun);
  tracker->JobSeen(Finished(Job("ok", "uid-ok"), true));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kUpdateRun), updates);
  EXPECT_NE(registry_.Render().find("coach_mlflow_runs_ended_total{status=\"FINISHED\"} 1"),
            std::string::npos)
      << registry_.Render();
}

TEST_F(MlflowTrackerTest, FailedEndsFailed) {
  auto tracker = NewTracker();
  tracker->JobSeen(Finished(Job("bad", "uid-bad"), false));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-bad");
  EXPECT_EQ(run.info.status, RunStatus::kFailed);
  EXPECT_EQ(run.tags["coach.state"], "Failed");
  EXPECT_EQ(run.tags["coach.message"], "master-0 exited 1");
}

TEST_F(MlflowTrackerTest, DeletedWhileRunningIsKilledWithLogsReadAtDeletion) {
  auto tracker = NewTracker();
  tracker->JobSeen(Running(Job("del", "uid-del")));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  const absl::Time before = absl::Now();
  tracker->JobDeleting(Running(Job("del", "uid-del")));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-del");
  EXPECT_EQ(run.info.status, RunStatus::kKilled);
  ASSERT_TRUE(run.info.end_time_ms.has_value());
  EXPECT_GE(*run.info.end_time_ms, absl::ToUnixMillis(before));
  EXPECT_TRUE(fake_.DownloadArtifact(run.info.run_id, "logs/attempt-0/master-0.log").ok());
}

TEST_F(MlflowTrackerTest, DeletedFinishedJobIsLeftAlone) {
  auto tracker = NewTracker();
  tracker->JobSeen(Finished(Job("ttl", "uid-ttl"), true));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  tracker->JobDeleting(Finished(Job("ttl", "uid-ttl"), true));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(OnlyRun("uid-ttl").info.status, RunStatus::kFinished);
  EXPECT_EQ(fake_.Calls(Method::kUpdateRun), 1);
}

TEST_F(MlflowTrackerTest, RestartFindsTheRunByTagOrAnnotation) {
  {
    auto first = NewTracker();
    // The annotation write is lost (the operator "crashed" before it landed).
    annotate_error_ = absl::UnavailableError("store down");
    first->JobSeen(Running(Job("r", "uid-r")));
    absl::SleepFor(absl::Milliseconds(100));
    first->Stop(absl::ZeroDuration());
  }
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
  annotate_error_.reset();
  auto second = NewTracker();
  second->JobSeen(Running(Job("r", "uid-r")));
  ASSERT_TRUE(second->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
  const std::string run_id = OnlyRun("uid-r").info.run_id;
  {
    absl::MutexLock lock(&mu_);
    EXPECT_EQ(annotations_["uid-r"][reconcile::kAnnotationMlflowRunId], run_id);
  }
  second->Stop(absl::ZeroDuration());

  // A third start with the annotation on the job does not search for the job's run (the one
  // search is for the training code's own runs, linked as the job ends).
  model::Job annotated = Finished(Job("r", "uid-r"), true);
  (*annotated.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflowRunId] =
      run_id;
  (*annotated.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflowExperimentId] =
      OnlyRun("uid-r").info.experiment_id;
  const int searches = fake_.Calls(Method::kSearchRuns);
  auto third = NewTracker();
  third->JobSeen(annotated);
  ASSERT_TRUE(third->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kSearchRuns), searches + 1);
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
  EXPECT_EQ(OnlyRun("uid-r").info.status, RunStatus::kFinished);

  // A fourth start on the ended run changes nothing.
  const int updates = fake_.Calls(Method::kUpdateRun);
  auto fourth = NewTracker();
  fourth->JobSeen(annotated);
  ASSERT_TRUE(fourth->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kUpdateRun), updates);
}

TEST_F(MlflowTrackerTest, OutageNeverBlocksAndBacksOffThenCatchesUp) {
  auto tracker = NewTracker();
  fake_.SetDown(true);
  fake_.SetLatency(absl::Milliseconds(20));
  model::Job job = Job("down", "uid-down");
  const absl::Time t0 = absl::Now();
  for (int i = 0; i < 100; ++i) tracker->JobSeen(Running(job));
  EXPECT_LT(absl::Now() - t0, absl::Milliseconds(50));  // never waits on the server
  absl::SleepFor(absl::Milliseconds(300));
  const int64_t errors = tracker->stats().errors;
  EXPECT_GE(errors, 2);
  // Backoff: far fewer attempts than a hot loop would make (300 ms / 20 ms latency = 15).
  EXPECT_LE(fake_.Calls(Method::kGetOrCreateExperiment), 12);
  // A failing server still holds a new job's replicas (it may be a server coming up), bounded.
  std::optional<absl::Time> hold = tracker->HoldStartUntil(Job("other", "uid-other"));
  ASSERT_TRUE(hold.has_value());
  EXPECT_LE(*hold - absl::Now(), absl::Seconds(120));
  EXPECT_NE(
      registry_.Render().find("coach_mlflow_errors_total{op=\"experiment\",kind=\"transient\"}"),
      std::string::npos);
  tracker->JobSeen(Finished(job, true));
  fake_.SetLatency(absl::ZeroDuration());
  fake_.SetDown(false);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-down");
  EXPECT_EQ(run.info.status, RunStatus::kFinished);
  EXPECT_EQ(run.tags["coach.state"], "Succeeded");
}

TEST_F(MlflowTrackerTest, StepsRunInOrderAcrossTransientFailures) {
  auto tracker = NewTracker();
  // The params batch fails twice: the final status must still come after params and tags.
  fake_.InjectError(Method::kLogBatch, absl::UnavailableError("503"), 2);
  tracker->JobSeen(Running(Job("o", "uid-o")));
  tracker->JobSeen(Finished(Job("o", "uid-o"), true));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-o");
  EXPECT_EQ(run.info.status, RunStatus::kFinished);
  EXPECT_EQ(run.params["coach.replicas.Worker"], "2");
  EXPECT_EQ(run.tags["coach.state"], "Succeeded");
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
}

// Each step's progress is kept when a later step fails: a retry repeats the failed call only.
TEST_F(MlflowTrackerTest, RetriesOfTheLastStepRepeatNoEarlierStep) {
  // The calls (each client method's, then the annotate hook's) that a fresh tracker makes to end
  // a job, ending the run failing `failures` times first. `restarted`: an earlier tracker saw the
  // job running and annotated it, so the run is found by its id and its status read.
  auto calls = [this] {
    std::vector<int> out;
    for (int m = 0; m <= static_cast<int>(Method::kDownloadArtifact); ++m) {
      out.push_back(fake_.Calls(static_cast<Method>(m)));
    }
    absl::MutexLock lock(&mu_);
    out.push_back(annotate_calls_);
    return out;
  };
  auto cost = [&](const std::string& uid, int failures, bool restarted) {
    model::Job ended = Finished(Job(uid, uid), true);
    if (restarted) {
      auto earlier = NewTracker();
      earlier->JobSeen(Running(Job(uid, uid)));
      EXPECT_TRUE(earlier->WaitIdle(absl::Seconds(10)));
      ended = WithRunId(ended, RunIdAnnotation(uid));
    }
    const std::vector<int> before = calls();
    auto tracker = NewTracker();
    fake_.InjectError(Method::kUpdateRun, absl::UnavailableError("503"), failures);
    tracker->JobSeen(ended);
    EXPECT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
    std::vector<int> after = calls();
    for (size_t i = 0; i < after.size(); ++i) after[i] -= before[i];
    return after;
  };
  for (bool restarted : {false, true}) {
    SCOPED_TRACE(restarted ? "restarted" : "fresh");
    const std::string prefix = restarted ? "uid-restarted-" : "uid-fresh-";
    std::vector<int> once = cost(prefix + "once", 0, restarted);
    const std::vector<int> retried = cost(prefix + "retried", 3, restarted);
    once[static_cast<int>(Method::kUpdateRun)] += 3;
    EXPECT_EQ(retried, once);
    EXPECT_EQ(OnlyRun(prefix + "retried").info.status, RunStatus::kFinished);
  }
}

TEST_F(MlflowTrackerTest, PermanentErrorsGiveUpAfterALimit) {
  auto tracker = NewTracker();
  fake_.InjectError(Method::kCreateRun, absl::PermissionDeniedError("403"), 100);
  tracker->JobSeen(Running(Job("p", "uid-p")));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 3);
  EXPECT_EQ(tracker->stats().given_up, 1);
  tracker->JobSeen(Running(Job("p", "uid-p")));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 3);
}

TEST_F(MlflowTrackerTest, UntrackedJobsCostNothing) {
  auto tracker = NewTracker();
  model::Job off = Running(Job("off", "uid-off"));
  (*off.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflow] = "false";
  tracker->JobSeen(off);
  tracker->JobDeleting(off);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kGetOrCreateExperiment), 0);
  EXPECT_FALSE(tracker->HoldStartUntil(off).has_value());
}

TEST_F(MlflowTrackerTest, PerJobAnnotationPicksServerAndExperiment) {
  auto tracker = NewTracker();
  model::Job job = Running(Job("a", "uid-a"));
  (*job.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflowTrackingUri] =
      "http://other:1";
  (*job.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflowExperiment] = "mine";
  tracker->JobSeen(job);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(uris_, std::vector<std::string>{"http://other:1"});
  EXPECT_TRUE(fake_.GetExperimentByName("mine").ok());
}

TEST_F(MlflowTrackerTest, HoldStartUntilIsBoundedAndStartsTheRun) {
  auto tracker = NewTracker();
  model::Job job = Job("h", "uid-h");
  *job.mutable_metadata()->mutable_creation_timestamp() = reconcile::ToTimestamp(absl::Now());
  std::optional<absl::Time> hold = tracker->HoldStartUntil(job);
  ASSERT_TRUE(hold.has_value());
  EXPECT_LE(*hold - absl::Now(), absl::Seconds(120));
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(RunsOf("uid-h").size(), 1u);  // HoldStartUntil queued the run's creation
  (*job.mutable_metadata()->mutable_annotations())[reconcile::kAnnotationMlflowRunId] = "x";
  EXPECT_FALSE(tracker->HoldStartUntil(job).has_value());
}

TEST_F(MlflowTrackerTest, SlowServerHoldsReplicasUntilTheRunIdIsOnTheJob) {
  ::coach::FakeClock clock;
  auto tracker = NewTracker(true, &clock);
  fake_.SetDown(true);
  const model::Job job = Job("slow", "uid-slow");
  const absl::Time t0 = clock.Now();
  std::optional<absl::Time> hold = tracker->HoldStartUntil(job);
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(*hold, t0 + absl::Seconds(120));  // the default bound, from the first hold
  // A minute of failures later the job is still held, to the same bound.
  EXPECT_TRUE(AdvanceUntilAnnotated(&clock, "uid-slow", absl::Seconds(2), 30).empty());
  EXPECT_GE(fake_.Calls(Method::kGetOrCreateExperiment), 2);
  hold = tracker->HoldStartUntil(job);
  ASSERT_TRUE(hold.has_value());
  EXPECT_EQ(*hold, t0 + absl::Seconds(120));
  // The server answers: the run is made and its id annotated well before the bound.
  fake_.SetDown(false);
  const std::string run_id = AdvanceUntilAnnotated(&clock, "uid-slow", absl::Seconds(1), 5);
  ASSERT_FALSE(run_id.empty());
  EXPECT_LT(clock.Now(), t0 + absl::Seconds(120));
  // The controller re-reads the job (annotated): replicas start now, with the run id.
  EXPECT_FALSE(tracker->HoldStartUntil(WithRunId(job, run_id)).has_value());
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-slow");
  EXPECT_EQ(run.info.run_id, run_id);
  EXPECT_EQ(run.tags.count("coach.run_incomplete"), 0u);
  EXPECT_TRUE(EventsWith("MlflowRunNotReady").empty());
  EXPECT_TRUE(EventsWith("MlflowRunIncomplete").empty());
}

TEST_F(MlflowTrackerTest, HeldJobRetriesOftenWhateverTheBackoffCap) {
  ::coach::FakeClock clock;
  auto tracker = NewTracker(true, &clock, [](MlflowTrackerOptions* o) {
    o->backoff_base = absl::Seconds(1);
    o->backoff_cap = absl::Minutes(10);
  });
  fake_.SetDown(true);
  ASSERT_TRUE(tracker->HoldStartUntil(Job("often", "uid-often")).has_value());
  // Each 2 s step brings another attempt (the default held_retry_cap); an uncapped backoff
  // (1, 2, 4, 8 ... s) would let the steps from the third on go by without one.
  int calls = 0;
  auto next_attempt = [&] {
    for (int j = 0; j < 2000; ++j) {
      if (fake_.Calls(Method::kGetOrCreateExperiment) > calls) {
        calls = fake_.Calls(Method::kGetOrCreateExperiment);
        // Slack for the worker to schedule the retry from this clock reading (the fake fails
        // at once); not a timing assertion.
        absl::SleepFor(absl::Milliseconds(200));
        return true;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  };
  ASSERT_TRUE(next_attempt());  // the first, at once
  for (int i = 0; i < 8; ++i) {
    clock.Advance(absl::Seconds(2));
    ASSERT_TRUE(next_attempt()) << "no retry in step " << i;
  }
}

TEST_F(MlflowTrackerTest, BoundHitStartsReplicasWithAWarningAndTheLateRunIsTaggedIncomplete) {
  ::coach::FakeClock clock;
  auto tracker =
      NewTracker(true, &clock, [](MlflowTrackerOptions* o) { o->run_wait = absl::Seconds(30); });
  fake_.SetDown(true);
  const model::Job job = Job("late", "uid-late");
  const absl::Time t0 = clock.Now();
  ASSERT_EQ(tracker->HoldStartUntil(job), t0 + absl::Seconds(30));
  EXPECT_TRUE(AdvanceUntilAnnotated(&clock, "uid-late", absl::Seconds(2), 15).empty());
  clock.Set(t0 + absl::Seconds(30));
  // The bound: the replicas start (without the run id), and stay released.
  EXPECT_FALSE(tracker->HoldStartUntil(job).has_value());
  EXPECT_FALSE(tracker->HoldStartUntil(job).has_value());
  std::vector<RecordedEvent> warned;
  for (int i = 0; i < 2000 && warned.empty(); ++i) {
    warned = EventsWith("MlflowRunNotReady");
    if (warned.empty()) absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].uid, "uid-late");
  EXPECT_EQ(warned[0].type, "Warning");
  EXPECT_NE(warned[0].message.find("http://mlflow.test:5000"), std::string::npos)
      << warned[0].message;
  EXPECT_NE(warned[0].message.find("30s"), std::string::npos) << warned[0].message;
  EXPECT_NE(warned[0].message.find("connection refused"), std::string::npos) << warned[0].message;
  // The job runs meanwhile; the server comes back: the run is made, marked incomplete.
  tracker->JobSeen(Running(job));
  fake_.SetDown(false);
  const std::string run_id = AdvanceUntilAnnotated(&clock, "uid-late", absl::Seconds(30), 20);
  ASSERT_FALSE(run_id.empty());
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-late");
  EXPECT_EQ(run.tags["coach.run_incomplete"], "true");
  EXPECT_NE(run.tags["coach.run_incomplete_reason"].find("lack its id"), std::string::npos);
  std::vector<RecordedEvent> incomplete = EventsWith("MlflowRunIncomplete");
  ASSERT_EQ(incomplete.size(), 1u);
  EXPECT_NE(incomplete[0].message.find(run_id), std::string::npos);
  EXPECT_EQ(EventsWith("MlflowRunNotReady").size(), 1u);  // once
  // Replicas recreated from now on get the id (the controller reads the annotation).
  EXPECT_FALSE(tracker->HoldStartUntil(WithRunId(Running(job), run_id)).has_value());
}

TEST_F(MlflowTrackerTest, RunCreatedJustAfterTheBoundIsTaggedIncomplete) {
  // The bound is hit while the run is made but before its id reached the job.
  ::coach::FakeClock clock;
  auto tracker =
      NewTracker(true, &clock, [](MlflowTrackerOptions* o) { o->run_wait = absl::Seconds(30); });
  annotate_error_ = absl::UnavailableError("store busy");
  const model::Job job = Job("edge", "uid-edge");
  ASSERT_TRUE(tracker->HoldStartUntil(job).has_value());
  for (int i = 0; i < 2000 && fake_.Calls(Method::kCreateRun) == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(fake_.Calls(Method::kCreateRun), 1);
  clock.Advance(absl::Seconds(30));
  EXPECT_FALSE(tracker->HoldStartUntil(job).has_value());
  {
    absl::MutexLock lock(&mu_);
    annotate_error_.reset();
  }
  ASSERT_FALSE(AdvanceUntilAnnotated(&clock, "uid-edge", absl::Seconds(2), 20).empty());
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(OnlyRun("uid-edge").tags["coach.run_incomplete"], "true");
  EXPECT_EQ(EventsWith("MlflowRunIncomplete").size(), 1u);
}

TEST_F(MlflowTrackerTest, RunForAJobAlreadyRunningIsTaggedIncompleteAndOnTimeOneIsNot) {
  auto tracker = NewTracker();
  tracker->JobSeen(Job("fresh", "uid-fresh"));       // not started: replicas will get the id
  tracker->JobSeen(Running(Job("old", "uid-old")));  // e.g. tracking turned on meanwhile
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(OnlyRun("uid-fresh").tags.count("coach.run_incomplete"), 0u);
  EXPECT_EQ(OnlyRun("uid-old").tags["coach.run_incomplete"], "true");
  EXPECT_TRUE(ReplicasStarted(Running(Job("x", "x")).status()));
  EXPECT_FALSE(ReplicasStarted(model::JobStatus()));
}

TEST_F(MlflowTrackerTest, RestartedOperatorHoldsAgainAndFindsTheRunInsteadOfASecond) {
  {
    auto first = NewTracker();
    annotate_error_ = absl::UnavailableError("operator crashed before the annotation landed");
    ASSERT_TRUE(first->HoldStartUntil(Job("rs", "uid-rs")).has_value());
    for (int i = 0; i < 2000 && fake_.Calls(Method::kCreateRun) == 0; ++i) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    first->Stop(absl::ZeroDuration());
  }
  {
    absl::MutexLock lock(&mu_);
    annotate_error_.reset();
  }
  auto second = NewTracker();
  ASSERT_TRUE(second->HoldStartUntil(Job("rs", "uid-rs")).has_value());
  ASSERT_TRUE(second->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(RunsOf("uid-rs").size(), 1u);
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
  EXPECT_EQ(RunIdAnnotation("uid-rs"), RunsOf("uid-rs")[0].run_id);
}

TEST_F(MlflowTrackerTest, GivenUpJobIsReleasedWithAWarning) {
  auto tracker = NewTracker();
  fake_.InjectError(Method::kCreateRun, absl::PermissionDeniedError("403"), 100);
  const model::Job job = Job("deny", "uid-deny");
  ASSERT_TRUE(tracker->HoldStartUntil(job).has_value());
  std::vector<RecordedEvent> failed;
  for (int i = 0; i < 2000 && failed.empty(); ++i) {
    failed = EventsWith("MlflowTrackingFailed");
    if (failed.empty()) absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_FALSE(tracker->HoldStartUntil(job).has_value());
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].message.find("403"), std::string::npos) << failed[0].message;
}

TEST_F(MlflowTrackerTest, ParamsAndConditionTagsArePure) {
  model::Job job = MakePyTorchJob("ns", "p").Master(1).Workers(3).NprocPerNode("2").Build();
  std::map<std::string, std::string> params;
  const std::optional<std::vector<mlflow::Param>> v1_params = RunParams(job);
  ASSERT_TRUE(v1_params.has_value());
  for (const mlflow::Param& p : *v1_params) params[p.key] = p.value;
  EXPECT_EQ(params["coach.world_size"], "8");
  EXPECT_EQ(params["coach.nproc_per_node"], "2");

  // A TrainJob: nothing before the reconciler has counted its pods, then its runtime's counts.
  model::Job train_job;
  train_job.set_kind(api::v1::TRAIN_JOB);
  train_job.mutable_spec()->set_train_job_spec_json(
      R"({"runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
          "trainer": {"numNodes": 4, "numProcPerNode": 2, "image": "team/train:1"}})");
  EXPECT_FALSE(RunParams(train_job).has_value());
  auto& statuses = *train_job.mutable_status()->mutable_replica_statuses();
  statuses["dataset-initializer"].set_replicas(1);
  statuses["node"].set_replicas(4);
  params.clear();
  const std::optional<std::vector<mlflow::Param>> v2_params = RunParams(train_job);
  ASSERT_TRUE(v2_params.has_value());
  for (const mlflow::Param& p : *v2_params) params[p.key] = p.value;
  EXPECT_EQ(params["coach.replicas.node"], "4");
  EXPECT_EQ(params["coach.replicas.dataset-initializer"], "1");
  EXPECT_EQ(params["coach.runtime"], "ClusterTrainingRuntime/torch-distributed");
  EXPECT_EQ(params["coach.image.trainer"], "team/train:1");
  EXPECT_EQ(params["coach.nproc_per_node"], "2");
  EXPECT_EQ(params["coach.world_size"], "8");
  std::map<std::string, std::string> tags = ConditionTags(model::JobStatus());
  EXPECT_EQ(tags["coach.state"], "Created");
  EXPECT_EQ(tags.size(), 1u);
}

}  // namespace
}  // namespace coach::tracking
