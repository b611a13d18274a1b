// The reconciler under coach.dev/restart-scope: Job and coach.dev/progress-deadline: each case
// a job, what the backend observed, and what the pass does.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/model/testing/observed_builder.h"
#include "operator/model/testing/result_text.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/reconciler.h"

namespace coach::reconcile {
namespace {

using model::Action;
using model::ObservedPod;
using model::PodPhase;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace coach::reconcile::testing;  // NOLINT

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

std::vector<std::string> Acts(const model::ReconcileResult& r) { return ActionsText(r); }
const api::v1::JobCondition& Last(const model::JobStatus& s) { return LastCondition(s); }

// A running 1 Master + 2 Workers job-scoped job in `attempt`, its replicas running since kT0.
JobBuilder ScopedJob() {
  return MakePyTorchJob("ns", "ddp")
      .Master(1)
      .Workers(2)
      .RestartPolicy("OnFailure")
      .Annotation("coach.dev/restart-scope", "Job")
      .Annotation("coach.dev/max-restarts", "2")
      .StartTime(kT0)
      .Condition("Created", "True", kT0)
      .Condition("Running", "True", kT0);
}

model::Job InAttempt(model::Job job, int attempt, int restarts = 0) {
  auto* coach = job.mutable_status()->mutable_coach();
  coach->set_attempt(attempt);
  coach->set_restarts(restarts);
  *coach->mutable_attempt_running_time() = ToTimestamp(kT0);
  return job;
}

model::Job WithStatusOf(model::Job job, const model::JobStatus& status) {
  *job.mutable_status() = status;
  return job;
}

// The Services of ScopedJob's replicas, which stay across attempts.
ObservedBuilder WithServices(ObservedBuilder b) {
  b.Object("Service", "ddp-master-0")
      .Object("Service", "ddp-worker-0")
      .Object("Service", "ddp-worker-1");
  return b;
}

ObservedBuilder AllRunning(const model::Job& job, int attempt) {
  ObservedBuilder b(job);
  b.Attempt(attempt).Running("Master", 0).Running("Worker", 0).Running("Worker", 1);
  return b;
}

TEST(JobScopeReconcileTest, OneRankFailingRestartsEveryReplicaOnce) {
  const model::Job job = InAttempt(ScopedJob().Build(), 0);
  auto observed = ObservedBuilder(job)
                      .Running("Master", 0)
                      .Running("Worker", 0)
                      .Failed("Worker", 1, 137)
                      .Build();
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(12), {});
  EXPECT_THAT(Acts(r), ElementsAre("delete Pod/ddp-master-0", "delete Pod/ddp-worker-0",
                                   "delete Pod/ddp-worker-1"));
  EXPECT_EQ(r.status.coach().attempt(), 1);
  EXPECT_EQ(r.status.coach().restarts(), 1);
  EXPECT_EQ(r.status.coach().restarts_by_type().at("Worker"), 1);
  EXPECT_FALSE(r.status.coach().has_attempt_running_time());
  EXPECT_EQ(Last(r.status).type(), "Restarting");
  EXPECT_EQ(Last(r.status).message(),
            "PyTorchJob ddp is restarting as a whole job (attempt 1, restart 1 of 2) because "
            "Worker replica 1 exited with code 137.");
  ASSERT_EQ(r.events.size(), 4u);  // three deletes and the restart
  EXPECT_EQ(r.events[0].reason, "PyTorchJobRestarting");
  EXPECT_EQ(r.events[0].type, "Warning");

  // The peers fail too before they are gone: no second restart.
  model::Job restarted = job;
  *restarted.mutable_status() = r.status;
  auto peers_failed = ObservedBuilder(job)
                          .Pod("Master", 0, PodPhase::kFailed, 1, 0, true)
                          .Pod("Worker", 0, PodPhase::kFailed, 1, 0, true)
                          .Pod("Worker", 1, PodPhase::kFailed, 137, 0, true)
                          .Build();
  auto wait = Reconcile(restarted, peers_failed, kT0 + absl::Seconds(13), {});
  EXPECT_THAT(Acts(wait), IsEmpty());
  EXPECT_EQ(wait.status.coach().restarts(), 1);
  EXPECT_EQ(Last(wait.status).type(), "Restarting");
}

TEST(JobScopeReconcileTest, NextAttemptStartsWhenThePreviousIsGone) {
  model::Job job = InAttempt(ScopedJob().Build(), 1, 1);
  job.mutable_status()->mutable_coach()->clear_attempt_running_time();  // as a restart leaves it
  // An old pod not yet deleting is deleted, and nothing starts while one is left.
  auto r = Reconcile(job, WithServices(ObservedBuilder(job).Running("Worker", 0)).Build(),
                     kT0 + absl::Seconds(14), {});
  EXPECT_THAT(Acts(r), ElementsAre("delete Pod/ddp-worker-0"));

  auto gone = WithServices(ObservedBuilder(job)).Build();
  auto start = Reconcile(job, gone, kT0 + absl::Seconds(15), {});
  EXPECT_THAT(Acts(start), ElementsAre("create Pod/ddp-master-0", "create Pod/ddp-worker-0",
                                       "create Pod/ddp-worker-1"));
  const model::Json& pod = start.actions[0].object.body;
  EXPECT_EQ(pod["metadata"]["labels"]["coach.dev/attempt"], "1");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  std::vector<std::string> env;
  for (const model::Json& e : pod["spec"]["containers"][0]["env"]) {
    env.push_back(e.value("name", "") + "=" + e.value("value", ""));
  }
  EXPECT_THAT(env, ::testing::IsSupersetOf({"COACH_ATTEMPT=1", "TORCHELASTIC_RESTART_COUNT=1"}));
}

TEST(JobScopeReconcileTest, RunningAttemptIsNotedOnceEveryReplicaRuns) {
  model::Job job = ScopedJob().Build();
  job.mutable_status()->clear_coach();
  auto r = Reconcile(job, AllRunning(job, 0).Build(), kT0 + absl::Seconds(3), {});
  EXPECT_EQ(FromTimestamp(r.status.coach().attempt_running_time()), kT0 + absl::Seconds(3));
  EXPECT_THAT(Acts(r), IsEmpty());
  EXPECT_FALSE(r.requeue_at.has_value());

  // With a progress deadline the stall clock starts, and the job is looked at again when it
  // runs out even if no replica ever reports.
  model::Job watched = ScopedJob().Annotation("coach.dev/progress-deadline", "60s").Build();
  auto w = Reconcile(watched, AllRunning(watched, 0).Build(), kT0 + absl::Seconds(3), {});
  EXPECT_EQ(w.requeue_at, kT0 + absl::Seconds(63));
}

TEST(JobScopeReconcileTest, SpentBudgetFailsTheJob) {
  const model::Job job = InAttempt(ScopedJob().Build(), 2, 2);
  auto r = Reconcile(job,
                     AllRunning(job, 2)
                         .Last([](ObservedPod& p) {
                           p.phase = PodPhase::kFailed;
                           p.exit_code = 137;
                         })
                         .Build(),
                     kT0 + absl::Seconds(20), {});
  EXPECT_EQ(Last(r.status).type(), "Failed");
  EXPECT_EQ(Last(r.status).reason(), "PyTorchJobFailed");
  EXPECT_EQ(Last(r.status).message(),
            "PyTorchJob ddp has failed because Worker replica 1 exited with code 137 and its "
            "restart budget (2) is spent.");
  EXPECT_EQ(r.status.coach().restarts(), 2);
}

TEST(JobScopeReconcileTest, DisruptionRestartsWithoutSpendingTheBudget) {
  const model::Job job = InAttempt(ScopedJob().Build(), 2, 2);
  auto r = Reconcile(job,
                     AllRunning(job, 2)
                         .Last([](ObservedPod& p) {
                           p.phase = PodPhase::kFailed;
                           p.disruption = "evicted: The node was low on resource: memory.";
                         })
                         .Build(),
                     kT0 + absl::Seconds(20), {});
  EXPECT_EQ(Last(r.status).type(), "Restarting");
  EXPECT_EQ(r.status.coach().attempt(), 3);
  EXPECT_EQ(r.status.coach().restarts(), 2);
  EXPECT_EQ(r.status.coach().disruptions(), 1);
  EXPECT_THAT(Last(r.status).message(),
              HasSubstr("(attempt 3, not counted: a disruption) because Worker replica 1 was "
                        "disrupted (evicted: The node was low on resource: memory.)"));
  EXPECT_EQ(r.events.back().type, "Normal");
}

// coach.dev/on-demand-after: the interruption that reaches it says so (condition and event), and
// the next attempt's pods ask for on-demand capacity; the ones before did not.
TEST(JobScopeReconcileTest, PodsGoOnDemandAfterTheInterruptionsTheJobAllows) {
  model::Job job = InAttempt(ScopedJob().Annotation("coach.dev/on-demand-after", "2").Build(), 1);
  job.mutable_status()->mutable_coach()->set_disruptions(1);
  auto evicted = [](ObservedPod& p) {
    p.phase = PodPhase::kFailed;
    p.disruption = "evicted: spot capacity reclaimed";
  };
  auto r = Reconcile(job, WithServices(AllRunning(job, 1).Last(evicted)).Build(),
                     kT0 + absl::Seconds(20), {});
  EXPECT_EQ(r.status.coach().disruptions(), 2);
  EXPECT_THAT(Last(r.status).message(),
              HasSubstr("after 2 interruption(s) (coach.dev/on-demand-after: 2) its pods go to "
                        "on-demand capacity (karpenter.sh/capacity-type: on-demand)"));
  std::vector<std::string> reasons;
  for (const auto& e : r.events) reasons.push_back(e.reason);
  EXPECT_THAT(reasons, ::testing::Contains("OnDemandCapacity"));

  const model::Job restarted = WithStatusOf(job, r.status);
  auto start = Reconcile(restarted, WithServices(ObservedBuilder(restarted)).Build(),
                         kT0 + absl::Seconds(25), {});
  ASSERT_FALSE(start.actions.empty());
  EXPECT_EQ(start.actions[0].object.body["spec"]["nodeSelector"]["karpenter.sh/capacity-type"],
            "on-demand");
  // The attempt before had one interruption: its pods were placed as the template says.
  model::Job one = job;
  one.mutable_status()->mutable_coach()->clear_attempt_running_time();  // as a restart leaves it
  auto before = Reconcile(one, WithServices(ObservedBuilder(one)).Build(), kT0, {});
  ASSERT_FALSE(before.actions.empty());
  EXPECT_FALSE(before.actions[0]
                   .object.body["spec"]
                   .value("nodeSelector", model::Json::object())
                   .contains("karpenter.sh/capacity-type"))
      << before.actions[0].object.body.dump();
}

TEST(JobScopeReconcileTest, LostNodeIsADisruptionAndItsPodIsForceDeletedAfterTheGrace) {
  const model::Job job = InAttempt(ScopedJob().Build(), 0);
  auto lost = AllRunning(job, 0).Last([](ObservedPod& p) { p.node_lost = true; }).Build();
  auto r = Reconcile(job, lost, kT0 + absl::Seconds(30), {});
  EXPECT_EQ(r.status.coach().disruptions(), 1);
  EXPECT_THAT(Last(r.status).message(), HasSubstr("Worker replica 1 lost its node"));

  model::Job next = job;
  *next.mutable_status() = r.status;
  model::ReconcileConfig config;
  config.lost_node_grace = absl::Minutes(2);
  auto stuck = WithServices(ObservedBuilder(job))
                   .Terminating("Worker", 1)
                   .Last([](ObservedPod& p) {
                     p.node_lost = true;
                     p.deletion_requested = kT0 + absl::Seconds(30);
                   })
                   .Build();
  auto early = Reconcile(next, stuck, kT0 + absl::Seconds(60), config);
  EXPECT_THAT(Acts(early), IsEmpty());
  EXPECT_EQ(early.requeue_at, kT0 + absl::Seconds(150));
  auto late = Reconcile(next, stuck, kT0 + absl::Seconds(150), config);
  EXPECT_THAT(Acts(late), ElementsAre("delete! Pod/ddp-worker-1"));
  EXPECT_EQ(late.events[0].reason, "ForceDeletePod");
}

TEST(JobScopeReconcileTest, ReplicaDeletedFromARunningAttemptIsADisruption) {
  const model::Job job = InAttempt(ScopedJob().Build(), 0);
  auto r = Reconcile(job, ObservedBuilder(job).Running("Master", 0).Running("Worker", 0).Build(),
                     kT0 + absl::Seconds(30), {});
  EXPECT_EQ(r.status.coach().disruptions(), 1);
  EXPECT_THAT(Last(r.status).message(), HasSubstr("Worker replica 1 was deleted"));
}

TEST(JobScopeReconcileTest, PermanentFailureFailsTheJob) {
  const model::Job job = InAttempt(ScopedJob().RestartPolicy("ExitCode").Build(), 0);
  auto r = Reconcile(
      job,
      ObservedBuilder(job).Running("Master", 0).Failed("Worker", 0, 1).Running("Worker", 1).Build(),
      kT0 + absl::Seconds(30), {});
  EXPECT_EQ(Last(r.status).type(), "Failed");
  EXPECT_EQ(Last(r.status).message(),
            "PyTorchJob ddp is failed because 1 Worker replica(s) failed: Worker replica 0 exited "
            "with code 1.");
  EXPECT_FALSE(r.status.coach().restarts());
}

TEST(JobScopeReconcileTest, PerTypeBudget) {
  const model::Job job =
      InAttempt(ScopedJob().Annotation("coach.dev/max-restarts-worker", "0").Build(), 0);
  auto r = Reconcile(job,
                     AllRunning(job, 0)
                         .Last([](ObservedPod& p) {
                           p.phase = PodPhase::kFailed;
                           p.exit_code = 137;
                         })
                         .Build(),
                     kT0 + absl::Seconds(20), {});
  EXPECT_EQ(Last(r.status).type(), "Failed");
  EXPECT_THAT(Last(r.status).message(), HasSubstr("its Worker restart budget (0) is spent"));
}

TEST(JobScopeReconcileTest, StoppedRankIsCaughtAtTheProgressDeadline) {
  const model::Job job =
      InAttempt(ScopedJob().Annotation("coach.dev/progress-deadline", "60s").Build(), 0);
  auto observed = [&](bool stopped) {
    return AllRunning(job, 0)
        .Last([&](ObservedPod& p) {
          p.stopped = stopped;
          p.progress =
              ObservedPod::Progress{4, {{"loss", 0.5}}, 0.4, kT0 + absl::Seconds(10), std::nullopt};
        })
        .Build();
  };
  auto quiet = Reconcile(job, observed(false), kT0 + absl::Seconds(69), {});
  EXPECT_THAT(Acts(quiet), IsEmpty());
  EXPECT_EQ(quiet.requeue_at, kT0 + absl::Seconds(70));

  auto r = Reconcile(job, observed(true), kT0 + absl::Seconds(70), {});
  EXPECT_THAT(Acts(r), ::testing::SizeIs(3));
  EXPECT_EQ(r.status.coach().restarts(), 1);
  EXPECT_EQ(r.status.coach().restarts_by_type().at("Worker"), 1);
  EXPECT_EQ(Last(r.status).message(),
            "PyTorchJob ddp is restarting as a whole job (attempt 1, restart 1 of 2) because it "
            "stalled: Worker replica 1 stopped (a process in state T) "
            "(coach.dev/progress-deadline: 1m).");
  // The last progress reaches the status with the restart.
  EXPECT_EQ(r.status.coach().progress().step(), 4);
}

TEST(JobScopeReconcileTest, StallWithNoBudgetLeftFailsWithReasonStalled) {
  const model::Job job =
      InAttempt(ScopedJob().Annotation("coach.dev/progress-deadline", "60s").Build(), 2, 2);
  auto r = Reconcile(job, AllRunning(job, 2).Build(),
                     kT0 + absl::Seconds(61) + absl::Nanoseconds(250'000'007), {});
  EXPECT_EQ(Last(r.status).type(), "Failed");
  EXPECT_EQ(Last(r.status).reason(), "PyTorchJobStalled");
  // In whole seconds.
  EXPECT_THAT(Last(r.status).message(), HasSubstr("no replica reported progress for 1m1s ("));
}

// An operator that started at kT0+50s has heard no report made before: the deadline runs from
// then, not from when the attempt ran.
TEST(JobScopeReconcileTest, StallCountsFromWhenTheBackendBeganToKnowReports) {
  const model::Job job =
      InAttempt(ScopedJob().Annotation("coach.dev/progress-deadline", "60s").Build(), 0);
  model::ObservedState observed = AllRunning(job, 0).Build();
  observed.progress_since = kT0 + absl::Seconds(50);
  auto quiet = Reconcile(job, observed, kT0 + absl::Seconds(100), {});
  EXPECT_THAT(Acts(quiet), IsEmpty());
  EXPECT_EQ(quiet.requeue_at, kT0 + absl::Seconds(110));
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(110), {});
  EXPECT_THAT(Acts(r), ::testing::SizeIs(3));
  EXPECT_THAT(Last(r.status).message(), HasSubstr("no replica reported progress for 1m"));
}

TEST(JobScopeReconcileTest, ReplicaScopeStallFails) {
  model::Job job = InAttempt(MakePyTorchJob("ns", "ddp")
                                 .Master(1)
                                 .Workers(2)
                                 .Annotation("coach.dev/progress-deadline", "30s")
                                 .StartTime(kT0)
                                 .Condition("Created", "True", kT0)
                                 .Condition("Running", "True", kT0)
                                 .Build(),
                             0);
  auto r = Reconcile(job, AllRunning(job, 0).Build(), kT0 + absl::Seconds(31), {});
  EXPECT_EQ(Last(r.status).reason(), "PyTorchJobStalled");
}

TEST(JobScopeReconcileTest, ReplicaScopePerTypeBudgetCountsPodRestarts) {
  const model::Job job = MakePyTorchJob("ns", "ddp")
                             .Master(1)
                             .Workers(2)
                             .RestartPolicy("OnFailure")
                             .Annotation("coach.dev/max-restarts-worker", "2")
                             .StartTime(kT0)
                             .Build();
  auto ok = Reconcile(job,
                      ObservedBuilder(job)
                          .Running("Master", 0, 5)
                          .Running("Worker", 0, 1)
                          .Running("Worker", 1)
                          .Build(),
                      kT0, {});
  EXPECT_NE(Last(ok.status).type(), "Failed");
  auto r = Reconcile(job,
                     ObservedBuilder(job)
                         .Running("Master", 0)
                         .Running("Worker", 0, 1)
                         .Running("Worker", 1, 1)
                         .Build(),
                     kT0, {});
  EXPECT_EQ(Last(r.status).type(), "Failed");
  EXPECT_THAT(Last(r.status).message(),
              HasSubstr("its Worker replicas reached their restart budget "
                        "(coach.dev/max-restarts-worker: 2)"));
}

TEST(JobScopeReconcileTest, ProgressReachesTheStatusAtMostEveryInterval) {
  model::Job job = MakePyTorchJob("ns", "ddp").Master(1).Workers(1).StartTime(kT0).Build();
  auto with = [&](int64_t step, absl::Time at) {
    return ObservedBuilder(job)
        .Running("Master", 0)
        .Last([&](ObservedPod& p) {
          p.progress = ObservedPod::Progress{step, {{"loss", 1.0 / step}}, 2.0, at, std::nullopt};
        })
        .Running("Worker", 0)
        .Build();
  };
  auto first = Reconcile(job, with(1, kT0 + absl::Seconds(1)), kT0 + absl::Seconds(1), {});
  EXPECT_EQ(first.status.coach().progress().step(), 1);
  EXPECT_EQ(first.status.coach().progress().metrics().at("loss"), 1.0);
  EXPECT_EQ(first.status.coach().progress().steps_per_second(), 2.0);
  EXPECT_FALSE(first.status.coach().has_attempt_running_time());  // upstream job: no stall clock
  *job.mutable_status() = first.status;
  auto soon = Reconcile(job, with(5, kT0 + absl::Seconds(4)), kT0 + absl::Seconds(4), {});
  EXPECT_EQ(soon.status.coach().progress().step(), 1);
  EXPECT_EQ(soon.requeue_at, kT0 + absl::Seconds(11));
  auto later = Reconcile(job, with(9, kT0 + absl::Seconds(11)), kT0 + absl::Seconds(11), {});
  EXPECT_EQ(later.status.coach().progress().step(), 9);
  // A job whose replicas report is looked at again after the interval.
  EXPECT_EQ(later.requeue_at, kT0 + absl::Seconds(21));

  // What JSON cannot carry never reaches the status.
  auto odd = ObservedBuilder(job)
                 .Running("Master", 0)
                 .Last([&](ObservedPod& p) {
                   p.progress = ObservedPod::Progress{3,
                                                      {{"loss", std::nan("")}, {"acc", 0.5}},
                                                      INFINITY,
                                                      kT0 + absl::Seconds(1),
                                                      std::nullopt};
                 })
                 .Running("Worker", 0)
                 .Build();
  model::Job fresh = MakePyTorchJob("ns", "ddp").Master(1).Workers(1).StartTime(kT0).Build();
  auto filtered = Reconcile(fresh, odd, kT0 + absl::Seconds(1), {});
  EXPECT_EQ(filtered.status.coach().progress().metrics().size(), 1u);
  EXPECT_EQ(filtered.status.coach().progress().steps_per_second(), 0);
}

TEST(JobScopeReconcileTest, UpstreamJobsKeepUpstreamPods) {
  const model::Job job =
      MakePyTorchJob("ns", "ddp").Master(1).Workers(1).RestartPolicy("OnFailure").Build();
  auto r = Reconcile(job, {}, kT0, {});
  const model::Json& pod = r.actions[0].object.body;
  EXPECT_FALSE(pod["metadata"]["labels"].contains("coach.dev/attempt"));
  EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
  // coach's own status holds the attempt timeline alone: nothing upstream readers look for.
  EXPECT_EQ(r.status.coach().attempts_size(), 1);
  EXPECT_FALSE(r.status.coach().has_progress());
  // A failed replica is recreated alone, as upstream.
  auto one = Reconcile(WithStatusOf(job, r.status),
                       ObservedBuilder(job).Running("Master", 0).Failed("Worker", 0, 137).Build(),
                       kT0 + absl::Seconds(5), {});
  EXPECT_THAT(Acts(one), ElementsAre("delete Pod/ddp-worker-0"));
}

TEST(JobScopeReconcileTest, OperatorDefaultMakesPyTorchJobsJobScoped) {
  model::ReconcileConfig config;
  config.pytorch_job_scope_default = true;
  const model::Job job =
      MakePyTorchJob("ns", "ddp").Master(1).Workers(1).RestartPolicy("OnFailure").Build();
  auto r = Reconcile(job, {}, kT0, config);
  EXPECT_EQ(r.actions[0].object.body["metadata"]["labels"]["coach.dev/attempt"], "0");
}

TEST(JobScopeReconcileTest, BadRecoveryAnnotationFailsTheJobNamingIt) {
  const model::Job job =
      MakePyTorchJob("ns", "ddp").Master(1).Annotation("coach.dev/restart-scope", "All").Build();
  auto r = Reconcile(job, {}, kT0, {});
  EXPECT_EQ(Last(r.status).reason(), "PyTorchJobFailedValidation");
  EXPECT_THAT(Last(r.status).message(), HasSubstr("metadata.annotations[coach.dev/restart-scope]"));
  EXPECT_THAT(Acts(r), IsEmpty());
}

}  // namespace
}  // namespace coach::reconcile
