// Recovery's decisions, apart from the pass: each case a job, what the backend observed, the
// status so far and the time, and what recovery decides.

#include "operator/reconcile/recovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "operator/model/testing/job_builder.h"
#include "operator/model/testing/observed_builder.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

using model::PodPhase;
using ::testing::HasSubstr;
using namespace coach::reconcile::testing;  // NOLINT

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

// A 1 Master + 2 Workers PyTorchJob with `annotations`, its attempt running since kT0.
model::Job Job(std::map<std::string, std::string> annotations, int attempt = 0, int restarts = 0) {
  JobBuilder b = MakePyTorchJob("ns", "ddp").Master(1).Workers(2).RestartPolicy("OnFailure");
  for (const auto& [k, v] : annotations) b.Annotation(k, v);
  model::Job job = b.StartTime(kT0).Condition("Running", "True", kT0).Build();
  auto* coach = job.mutable_status()->mutable_coach();
  coach->set_attempt(attempt);
  coach->set_restarts(restarts);
  *coach->mutable_attempt_running_time() = ToTimestamp(kT0);
  return job;
}

const std::map<std::string, std::string> kJobScope = {{"coach.dev/restart-scope", "Job"},
                                                      {"coach.dev/max-restarts", "2"}};

struct Decided {
  RecoveryDecision decision;
  std::optional<absl::Time> requeue;
  int attempt = 0;
};

Decided DecideJobScope(const model::Job& job, const model::ObservedState& observed, absl::Time now,
                       model::ReconcileConfig config = {}) {
  const RecoveryPolicy policy = *ParseRecoveryPolicy(job, config);
  Recovery recovery(job, policy, observed, job.status(), now, config);
  recovery.FindAttempt();
  Decided out;
  out.decision = recovery.DecideJobScope(/*running=*/true, out.requeue);
  out.attempt = recovery.attempt();
  return out;
}

TEST(RecoveryTest, NothingToDoWhileEveryReplicaRuns) {
  const model::Job job = Job(kJobScope);
  const auto observed =
      ObservedBuilder(job).Running("Master", 0).Running("Worker", 0).Running("Worker", 1).Build();
  EXPECT_EQ(DecideJobScope(job, observed, kT0).decision.kind, RecoveryDecision::Kind::kNone);
}

TEST(RecoveryTest, ARetryableFailureIsACountedRestartChargedToItsType) {
  const model::Job job = Job(kJobScope);
  const auto observed = ObservedBuilder(job)
                            .Running("Master", 0)
                            .Running("Worker", 0)
                            .Failed("Worker", 1, 137)
                            .Build();
  const Decided d = DecideJobScope(job, observed, kT0);
  EXPECT_EQ(d.decision.kind, RecoveryDecision::Kind::kRestart);
  EXPECT_TRUE(d.decision.counted);
  EXPECT_EQ(d.decision.replica_type, "Worker");
  EXPECT_THAT(d.decision.why, HasSubstr("Worker replica 1"));
}

TEST(RecoveryTest, AnEvictionIsARestartThatSpendsNoBudget) {
  const model::Job job = Job(kJobScope);
  const auto observed =
      ObservedBuilder(job)
          .Running("Master", 0)
          .Running("Worker", 0)
          .Failed("Worker", 1, 137)
          .Last([](model::ObservedPod& p) { p.disruption = "evicted: low memory"; })
          .Build();
  const Decided d = DecideJobScope(job, observed, kT0);
  EXPECT_EQ(d.decision.kind, RecoveryDecision::Kind::kRestart);
  EXPECT_FALSE(d.decision.counted);
}

TEST(RecoveryTest, AFailureWithTheBudgetSpentFailsTheJobInJobSetsWordsToo) {
  const model::Job job = Job(kJobScope, /*attempt=*/2, /*restarts=*/2);
  const auto observed = ObservedBuilder(job)
                            .Attempt(2)
                            .Running("Master", 0)
                            .Running("Worker", 0)
                            .Failed("Worker", 1, 1)
                            .Build();
  const Decided d = DecideJobScope(job, observed, kT0);
  EXPECT_EQ(d.decision.kind, RecoveryDecision::Kind::kFail);
  EXPECT_EQ(d.decision.reason, "Failed");
  EXPECT_EQ(d.decision.upstream_reason, "ReachedMaxRestarts");
  EXPECT_THAT(d.decision.message, HasSubstr("restart budget (2) is spent"));
}

TEST(RecoveryTest, NoProgressPastTheDeadlineIsAStallAndEarlierARequeue) {
  std::map<std::string, std::string> annotations = kJobScope;
  annotations["coach.dev/progress-deadline"] = "1m";
  const model::Job job = Job(annotations);
  const auto observed =
      ObservedBuilder(job).Running("Master", 0).Running("Worker", 0).Running("Worker", 1).Build();
  const Decided early = DecideJobScope(job, observed, kT0 + absl::Seconds(30));
  EXPECT_EQ(early.decision.kind, RecoveryDecision::Kind::kNone);
  EXPECT_EQ(early.requeue, kT0 + absl::Minutes(1));
  const Decided late = DecideJobScope(job, observed, kT0 + absl::Minutes(2));
  EXPECT_EQ(late.decision.kind, RecoveryDecision::Kind::kRestart);
  EXPECT_TRUE(late.decision.counted);
  EXPECT_THAT(late.decision.why, HasSubstr("it stalled"));
}

TEST(RecoveryTest, TheAttemptIsTheLatestThePodsCarry) {
  const model::Job job = Job(kJobScope, /*attempt=*/1);
  const auto observed = ObservedBuilder(job)
                            .Attempt(2)
                            .Running("Master", 0)
                            .Running("Worker", 0)
                            .Running("Worker", 1)
                            .Build();
  EXPECT_EQ(DecideJobScope(job, observed, kT0).attempt, 2);
}

TEST(RecoveryTest, PodsOfAnEarlierAttemptAreStaleAndHoldTheNextOneBack) {
  const model::Job job = Job(kJobScope, /*attempt=*/1);
  const model::ReconcileConfig config;
  const RecoveryPolicy policy = *ParseRecoveryPolicy(job, config);
  const auto observed = ObservedBuilder(job).Attempt(0).Running("Worker", 1).Build();
  Recovery recovery(job, policy, observed, job.status(), kT0, config);
  recovery.FindAttempt();
  EXPECT_TRUE(recovery.Stale(observed.pods[0]));
  EXPECT_TRUE(recovery.PreviousAttemptLeft());
  EXPECT_TRUE(recovery.current().empty());
}

TEST(RecoveryTest, ReplicaScopeRestartsPastBackoffLimitSpendTheBudget) {
  model::Job job = Job({});
  job.mutable_spec()->mutable_run_policy()->set_backoff_limit(3);
  const model::ReconcileConfig config;
  const RecoveryPolicy policy = *ParseRecoveryPolicy(job, config);
  const auto under = ObservedBuilder(job).Running("Master", 0).Running("Worker", 0, 2).Build();
  EXPECT_EQ(Recovery(job, policy, under, job.status(), kT0, config).ReplicaBudgetSpent(), "");
  const auto over = ObservedBuilder(job).Running("Master", 0, 1).Running("Worker", 0, 2).Build();
  EXPECT_THAT(Recovery(job, policy, over, job.status(), kT0, config).ReplicaBudgetSpent(),
              HasSubstr("reached the specified backoff limit"));
}

TEST(RecoveryTest, APodStuckOnALostNodeIsForceDeletedAfterTheGrace) {
  const model::Job job = Job({});
  const model::ReconcileConfig config;
  const RecoveryPolicy policy = *ParseRecoveryPolicy(job, config);
  const auto observed = ObservedBuilder(job)
                            .Running("Worker", 0)
                            .Last([](model::ObservedPod& p) {
                              p.deleting = true;
                              p.node_lost = true;
                              p.deletion_requested = kT0;
                            })
                            .Build();
  std::optional<absl::Time> requeue;
  Recovery early(job, policy, observed, job.status(), kT0 + absl::Minutes(1), config);
  EXPECT_TRUE(early.LostPodsToForceDelete(requeue).empty());
  EXPECT_EQ(requeue, kT0 + config.lost_node_grace);
  Recovery late(job, policy, observed, job.status(), kT0 + absl::Minutes(3), config);
  EXPECT_EQ(late.LostPodsToForceDelete(requeue).size(), 1u);
}

TEST(RecoveryTest, ARecordedRestartAdvancesTheAttemptAndCountsWhatItSpent) {
  model::JobStatus status;
  RecoveryDecision counted;
  counted.kind = RecoveryDecision::Kind::kRestart;
  counted.counted = true;
  counted.replica_type = "Worker";
  counted.why = "Worker replica 1 exited with code 137";
  RecoveryPolicy policy;
  policy.max_restarts = 3;
  const std::string msg =
      RecordRestart(counted, 0, false, "", policy, "PyTorchJob", "ddp", kT0, status);
  EXPECT_EQ(status.coach().attempt(), 1);
  EXPECT_EQ(status.coach().restarts(), 1);
  EXPECT_EQ(status.coach().restarts_by_type().at("Worker"), 1);
  EXPECT_THAT(msg, HasSubstr("(attempt 1, restart 1 of 3)"));
  RecoveryDecision disruption;
  disruption.kind = RecoveryDecision::Kind::kRestart;
  disruption.why = "evicted";
  RecordRestart(disruption, 1, false, "", policy, "PyTorchJob", "ddp", kT0, status);
  EXPECT_EQ(status.coach().attempt(), 2);
  EXPECT_EQ(status.coach().restarts(), 1);
  EXPECT_EQ(status.coach().disruptions(), 1);
}

}  // namespace
}  // namespace coach::reconcile
