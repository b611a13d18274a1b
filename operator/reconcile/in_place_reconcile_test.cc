// The reconciler under coach.dev/restart-mode: InPlace: a whole-job restart whose ranks restart
// inside their pods, told to each pod's coach-launch by the launch directive.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/model/testing/job_builder.h"
#include "operator/model/testing/observed_builder.h"
#include "operator/model/testing/result_text.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/desired_objects.h"
#include "operator/reconcile/reconciler.h"

namespace coach::reconcile {
namespace {

using model::Action;
using model::LaunchDirective;
using model::ObservedPod;
using model::PodPhase;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace coach::reconcile::testing;  // NOLINT

using Phase = ObservedPod::Launch::Phase;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

model::ReconcileConfig Reporting() {
  model::ReconcileConfig config;
  config.progress_report_address = "coach-operator.coach-system.svc:7450";
  return config;
}

std::vector<std::string> Acts(const model::ReconcileResult& r) { return ActionsText(r); }
const api::v1::JobCondition& Last(const model::JobStatus& s) { return LastCondition(s); }

// 1 Master + 2 Workers restarting in place, in `attempt`, its replicas running since kT0.
model::Job InPlaceJob(int attempt = 0, const std::string& restart_policy = "OnFailure") {
  model::Job job = MakePyTorchJob("ns", "ddp")
                       .Master(1)
                       .Workers(2)
                       .RestartPolicy(restart_policy)
                       .Annotation("coach.dev/restart-scope", "Job")
                       .Annotation("coach.dev/restart-mode", "InPlace")
                       .Annotation("coach.dev/max-restarts", "2")
                       .StartTime(kT0)
                       .Condition("Created", "True", kT0)
                       .Condition("Running", "True", kT0)
                       .Build();
  auto* coach = job.mutable_status()->mutable_coach();
  coach->set_attempt(attempt);
  *coach->mutable_attempt_running_time() = ToTimestamp(kT0);
  return job;
}

// The job as a restart left it: attempt `attempt` asked for at `at`, not yet running.
model::Job Restarted(model::Job job, const model::JobStatus& status) {
  *job.mutable_status() = status;
  return job;
}

auto Launch(int attempt, Phase phase, int exit_code = 0) {
  return [=](ObservedPod& pod) { pod.launch = ObservedPod::Launch{attempt, phase, exit_code}; };
}

// Three Running pods created for attempt 0, whose launchers report these states.
model::ObservedState Pods(const model::Job& job, ObservedPod::Launch master,
                          ObservedPod::Launch worker0, ObservedPod::Launch worker1) {
  return ObservedBuilder(job)
      .Running("Master", 0)
      .Last(Launch(master.attempt, master.phase, master.exit_code))
      .Running("Worker", 0)
      .Last(Launch(worker0.attempt, worker0.phase, worker0.exit_code))
      .Running("Worker", 1)
      .Last(Launch(worker1.attempt, worker1.phase, worker1.exit_code))
      .Build();
}

TEST(InPlaceReconcileTest, FailedRankRestartsTheJobWithoutTouchingItsPods) {
  const model::Job job = InPlaceJob();
  auto r = Reconcile(
      job, Pods(job, {0, Phase::kRunning}, {0, Phase::kRunning}, {0, Phase::kFailed, 137}),
      kT0 + absl::Seconds(12), Reporting());
  EXPECT_THAT(Acts(r), IsEmpty());
  EXPECT_EQ(r.status.coach().attempt(), 1);
  EXPECT_EQ(r.status.coach().restarts(), 1);
  EXPECT_EQ(r.status.coach().in_place_restarts(), 1);
  EXPECT_EQ(FromTimestamp(r.status.coach().restart_time()), kT0 + absl::Seconds(12));
  EXPECT_FALSE(r.status.coach().has_attempt_running_time());
  EXPECT_EQ(Last(r.status).type(), "Restarting");
  EXPECT_EQ(Last(r.status).message(),
            "PyTorchJob ddp is restarting as a whole job, its ranks in place (attempt 1, restart "
            "1 of 2) because Worker replica 1 exited with code 137.");
  // The ranks of attempt 0 still run: the launchers stop them, and start nothing yet.
  EXPECT_EQ(r.launch, (LaunchDirective{1, false, false}));
}

TEST(InPlaceReconcileTest, NextAttemptStartsOnceEveryRankOfTheLastStopped) {
  const model::Job job = InPlaceJob();
  const model::Job restarted = Restarted(
      job,
      Reconcile(job, Pods(job, {0, Phase::kRunning}, {0, Phase::kRunning}, {0, Phase::kFailed, 1}),
                kT0 + absl::Seconds(12), Reporting())
          .status);
  // One launcher still runs attempt 0's ranks: nothing starts, nothing is created.
  auto wait = Reconcile(
      restarted, Pods(job, {0, Phase::kRunning}, {0, Phase::kStopped}, {0, Phase::kFailed, 1}),
      kT0 + absl::Seconds(13), Reporting());
  EXPECT_THAT(Acts(wait), IsEmpty());
  EXPECT_EQ(wait.launch, (LaunchDirective{1, false, false}));
  EXPECT_EQ(wait.status.coach().restarts(), 1);
  EXPECT_EQ(Last(wait.status).type(), "Restarting");

  auto go = Reconcile(restarted,
                      Pods(job, {0, Phase::kStopped}, {0, Phase::kStopped}, {0, Phase::kFailed, 1}),
                      kT0 + absl::Seconds(14), Reporting());
  EXPECT_THAT(Acts(go), IsEmpty());
  EXPECT_EQ(go.launch, (LaunchDirective{1, true, false}));
  EXPECT_EQ(go.status.coach().restarts(), 1);
  EXPECT_EQ(Last(go.status).type(), "Restarting");  // the pods run, the ranks do not yet
  EXPECT_FALSE(go.status.coach().has_attempt_running_time());

  // Every launcher runs attempt 1: the attempt runs.
  auto running =
      Reconcile(Restarted(job, go.status),
                Pods(job, {1, Phase::kRunning}, {1, Phase::kRunning}, {1, Phase::kRunning}),
                kT0 + absl::Seconds(20), Reporting());
  EXPECT_THAT(Acts(running), IsEmpty());
  EXPECT_EQ(running.launch, (LaunchDirective{1, true, false}));
  EXPECT_EQ(FromTimestamp(running.status.coach().attempt_running_time()), kT0 + absl::Seconds(20));
  EXPECT_EQ(Last(running.status).type(), "Running");

  // A failure in attempt 1 is a second restart, in place again; the one of attempt 0 is not.
  auto again =
      Reconcile(Restarted(job, running.status),
                Pods(job, {1, Phase::kFailed, 139}, {1, Phase::kRunning}, {1, Phase::kRunning}),
                kT0 + absl::Seconds(30), Reporting());
  EXPECT_EQ(again.status.coach().attempt(), 2);
  EXPECT_EQ(again.status.coach().restarts(), 2);
  EXPECT_EQ(again.status.coach().in_place_restarts(), 2);
  EXPECT_EQ(again.launch, (LaunchDirective{2, false, false}));
}

TEST(InPlaceReconcileTest, PodsThatFinishTheAttemptTheyWereCarriedIntoBelongToIt) {
  model::Job job = InPlaceJob(1);
  job.mutable_status()->mutable_coach()->set_restarts(1);
  // Created for attempt 0, restarted in place into attempt 1, where the Master's ranks and then
  // its container ended: it is attempt 1's, not a pod someone deleted.
  auto observed = ObservedBuilder(job)
                      .Succeeded("Master", 0)
                      .Last(Launch(1, Phase::kRunning))
                      .Running("Worker", 0)
                      .Last(Launch(1, Phase::kRunning))
                      .Running("Worker", 1)
                      .Last(Launch(1, Phase::kRunning))
                      .Build();
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(40), Reporting());
  EXPECT_THAT(Acts(r), IsEmpty());
  EXPECT_EQ(r.status.coach().attempt(), 1);
  EXPECT_EQ(r.status.coach().disruptions(), 0);
  EXPECT_EQ(Last(r.status).type(), "Succeeded");  // a PyTorchJob succeeds with its Master
}

TEST(InPlaceReconcileTest, AStalledJobRestartsInPlace) {
  model::Job job = InPlaceJob();
  (*job.mutable_metadata()->mutable_annotations())["coach.dev/progress-deadline"] = "60s";
  // Every launcher answers; the training behind them made no progress for the deadline.
  model::ObservedState observed =
      Pods(job, {0, Phase::kRunning}, {0, Phase::kRunning}, {0, Phase::kRunning});
  for (ObservedPod& p : observed.pods) {
    p.progress = ObservedPod::Progress{4, {}, 0, kT0 + absl::Seconds(10), std::nullopt};
  }
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(70), Reporting());
  EXPECT_THAT(Acts(r), IsEmpty());
  EXPECT_EQ(r.status.coach().attempt(), 1);
  EXPECT_EQ(r.status.coach().in_place_restarts(), 1);
  EXPECT_THAT(Last(r.status).message(), HasSubstr("its ranks in place"));
  EXPECT_THAT(Last(r.status).message(), HasSubstr("stalled"));
  EXPECT_EQ(r.launch, (LaunchDirective{1, false, false}));
}

TEST(InPlaceReconcileTest, PodsWithoutALauncherAreRecreated) {
  const model::Job job = InPlaceJob();
  // Worker 0's container does not run coach-launch (it never reported).
  auto observed = ObservedBuilder(job)
                      .Running("Master", 0)
                      .Last(Launch(0, Phase::kRunning))
                      .Running("Worker", 0)
                      .Running("Worker", 1)
                      .Last(Launch(0, Phase::kFailed, 137))
                      .Build();
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(12), Reporting());
  EXPECT_THAT(Acts(r), ElementsAre("delete Pod/ddp-master-0", "delete Pod/ddp-worker-0",
                                   "delete Pod/ddp-worker-1"));
  EXPECT_EQ(r.status.coach().attempt(), 1);
  EXPECT_EQ(r.status.coach().in_place_restarts(), 0);
  EXPECT_THAT(Last(r.status).message(),
              HasSubstr("because Worker replica 1 exited with code 137. Its pods are recreated: "
                        "pod ddp-worker-0's coach-launch has not reported."));
}

TEST(InPlaceReconcileTest, DisruptionRecreatesThePods) {
  const model::Job job = InPlaceJob();
  auto observed = ObservedBuilder(job)
                      .Running("Master", 0)
                      .Last(Launch(0, Phase::kRunning))
                      .Running("Worker", 0)
                      .Last(Launch(0, Phase::kRunning))
                      .Running("Worker", 1)
                      .Last(Launch(0, Phase::kRunning))
                      .Last([](ObservedPod& p) { p.node_lost = true; })
                      .Build();
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(12), Reporting());
  EXPECT_EQ(r.status.coach().disruptions(), 1);
  EXPECT_EQ(r.status.coach().in_place_restarts(), 0);
  EXPECT_THAT(Acts(r), Contains("delete Pod/ddp-worker-1"));
  EXPECT_EQ(Acts(r).size(), 3u);
}

TEST(InPlaceReconcileTest, RanksNotBackInTimeAreRecreated) {
  const model::Job job = InPlaceJob();
  const model::Job restarted = Restarted(
      job,
      Reconcile(job, Pods(job, {0, Phase::kRunning}, {0, Phase::kRunning}, {0, Phase::kFailed, 1}),
                kT0, Reporting())
          .status);
  const model::ObservedState stuck =
      Pods(job, {0, Phase::kRunning}, {0, Phase::kStopped}, {0, Phase::kFailed, 1});
  auto before = Reconcile(restarted, stuck, kT0 + absl::Seconds(30), Reporting());
  EXPECT_THAT(Acts(before), IsEmpty());
  EXPECT_EQ(before.requeue_at, kT0 + absl::Seconds(60));

  auto after = Reconcile(restarted, stuck, kT0 + absl::Seconds(60), Reporting());
  EXPECT_THAT(Acts(after), ElementsAre("delete Pod/ddp-master-0", "delete Pod/ddp-worker-0",
                                       "delete Pod/ddp-worker-1"));
  EXPECT_THAT(EventReasons(after), Contains("PyTorchJobInPlaceRestartTimedOut"));
  EXPECT_EQ(after.status.coach().attempt(), 1);  // the same attempt, in new pods
  EXPECT_EQ(after.status.coach().restarts(), 1);
}

TEST(InPlaceReconcileTest, PermanentFailureFailsTheJobAndTellsTheLaunchersToExit) {
  const model::Job job = InPlaceJob(0, "ExitCode");
  auto r =
      Reconcile(job, Pods(job, {0, Phase::kRunning}, {0, Phase::kFailed, 2}, {0, Phase::kRunning}),
                kT0 + absl::Seconds(12), Reporting());
  EXPECT_EQ(Last(r.status).type(), "Failed");
  EXPECT_THAT(Last(r.status).message(), HasSubstr("Worker replica 0 exited with code 2"));
  EXPECT_EQ(r.launch, (LaunchDirective{0, true, true}));
}

TEST(InPlaceReconcileTest, AFinishedJobsLaunchersAreToldToExitOnEveryPass) {
  const model::Job job = InPlaceJob(0, "ExitCode");
  auto failed =
      Reconcile(job, Pods(job, {0, Phase::kRunning}, {0, Phase::kFailed, 2}, {0, Phase::kRunning}),
                kT0 + absl::Seconds(12), Reporting());
  ASSERT_EQ(Last(failed.status).type(), "Failed");
  // A later pass (an event, a resync, another operator): the word is still exit, else a
  // launcher still waiting would hear no directive at all.
  auto later =
      Reconcile(Restarted(job, failed.status),
                Pods(job, {0, Phase::kRunning}, {0, Phase::kFailed, 2}, {0, Phase::kRunning}),
                kT0 + absl::Seconds(20), Reporting());
  ASSERT_TRUE(later.launch.has_value());
  EXPECT_TRUE(later.launch->exit);
}

TEST(InPlaceReconcileTest, WithoutProgressReportsNoLauncherIsDirected) {
  // No launcher runs in place then (its pod has no COACH_RESTART_MODE): a failed rank fails
  // its pod, which restarts the job by recreating its pods.
  const model::Job job = InPlaceJob();
  auto observed = ObservedBuilder(job)
                      .Running("Master", 0)
                      .Running("Worker", 0)
                      .Failed("Worker", 1, 137)
                      .Build();
  auto r = Reconcile(job, observed, kT0 + absl::Seconds(12), {});
  EXPECT_FALSE(r.launch.has_value());
  EXPECT_EQ(Acts(r).size(), 3u);
  EXPECT_EQ(r.status.coach().in_place_restarts(), 0);
}

std::vector<std::string> EnvOf(const model::Json& pod) {
  std::vector<std::string> env;
  for (const model::Json& e : pod["spec"]["containers"][0]["env"]) {
    env.push_back(e.value("name", "") + "=" + e.value("value", ""));
  }
  return env;
}

TEST(InPlaceReconcileTest, PodsSayTheyRestartInPlace) {
  auto pod = DesiredPod(InPlaceJob(3), "Worker", 0, Reporting());
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_THAT(EnvOf(pod->body),
              ::testing::IsSupersetOf({"COACH_ATTEMPT=3", "COACH_RESTART_MODE=InPlace"}));
  // Without the operator's progress address no launcher could hear of a restart.
  auto plain = DesiredPod(InPlaceJob(3), "Worker", 0, {});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(EnvOf(plain->body), Not(Contains("COACH_RESTART_MODE=InPlace")));
}

}  // namespace
}  // namespace coach::reconcile
