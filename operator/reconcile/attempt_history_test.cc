#include "operator/reconcile/attempt_history.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/v1/coach_status.h"
#include "api/v1/job_conditions.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

using model::ObservedPod;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

model::Job Job() { return testing::MakePyTorchJob("ns", "ddp").Master(1).Workers(2).Build(); }

ObservedPod Pod(const std::string& name, const std::string& node, int64_t step = -1) {
  ObservedPod pod;
  pod.name = name;
  pod.node = node;
  if (step >= 0) {
    pod.progress.emplace();
    pod.progress->step = step;
    pod.progress->time = kT0;
  }
  return pod;
}

TEST(AttemptHistoryTest, NamesSignalsAndReasons) {
  EXPECT_EQ(LogReplicaName(Job(), "ddp-worker-1"), "worker-1");
  EXPECT_EQ(LogReplicaName(Job(), "other-worker-1"), "other-worker-1");
  EXPECT_EQ(SignalName(137), "SIGKILL");
  EXPECT_EQ(SignalName(143), "SIGTERM");
  EXPECT_EQ(SignalName(139), "SIGSEGV");
  EXPECT_EQ(SignalName(1), "");
  EXPECT_EQ(SignalName(128), "");

  ObservedPod pod;
  EXPECT_EQ(PodEndReason(pod), "Failed");
  pod.message = "OOMKilled";
  EXPECT_EQ(PodEndReason(pod), "OOMKilled");
  pod.disruption = "evicted: The node was low on resource: memory.";
  EXPECT_EQ(PodEndReason(pod), "Evicted");
  pod.disruption = "preempted";
  EXPECT_EQ(PodEndReason(pod), "Preempted");
  pod.disruption = "node shutdown";
  EXPECT_EQ(PodEndReason(pod), "NodeLost");
  pod.disruption = "disrupted (SomethingElse)";
  EXPECT_EQ(PodEndReason(pod), "Disrupted");
  pod.disruption = "";
  pod.node_lost = true;
  EXPECT_EQ(PodEndReason(pod), "NodeLost");
}

TEST(AttemptHistoryTest, NotesNodesAndRunningOnceThenCloses) {
  model::JobStatus status;
  const model::Job job = Job();
  std::vector<ObservedPod> pods = {Pod("ddp-master-0", "node-a"), Pod("ddp-worker-0", ""),
                                   Pod("ddp-worker-1", "node-b", 40)};
  NoteAttemptPods(job, pods, 0, kT0, std::nullopt, status);
  ASSERT_EQ(status.coach().attempts_size(), 1);
  const api::v1::JobAttempt& a = status.coach().attempts(0);
  EXPECT_EQ(a.attempt(), 0);
  EXPECT_EQ(FromTimestamp(a.start_time()), kT0);
  EXPECT_FALSE(a.has_running_time());
  EXPECT_EQ(a.nodes().size(), 2u);
  EXPECT_EQ(a.nodes().at("master-0"), "node-a");
  // No step is written while it runs: a running job's status is not rewritten for progress.
  EXPECT_EQ(a.last_step(), 0);

  pods[1].node = "node-c";
  NoteAttemptPods(job, pods, 0, kT0, kT0 + absl::Seconds(5), status);
  NoteAttemptPods(job, pods, 0, kT0, kT0 + absl::Seconds(9), status);
  EXPECT_EQ(status.coach().attempts(0).nodes().at("worker-0"), "node-c");
  EXPECT_EQ(FromTimestamp(status.coach().attempts(0).running_time()), kT0 + absl::Seconds(5));

  pods[2].exit_code = 137;
  AttemptEnd end;
  end.reason = "Failed";
  end.message = "worker 1 failed";
  end.pod = &pods[2];
  end.counted = true;
  CloseAttempt(job, pods, 0, kT0, end, kT0 + absl::Seconds(30), status);
  const api::v1::JobAttempt& closed = status.coach().attempts(0);
  EXPECT_EQ(FromTimestamp(closed.end_time()), kT0 + absl::Seconds(30));
  EXPECT_EQ(closed.reason(), "Failed");
  EXPECT_EQ(closed.replica(), "worker-1");
  EXPECT_EQ(closed.exit_code(), 137);
  EXPECT_EQ(closed.signal(), "SIGKILL");
  EXPECT_EQ(closed.last_step(), 40);
  EXPECT_TRUE(closed.counted());

  // Closed stays closed: a later pass of the same attempt changes nothing.
  const model::JobStatus before = status;
  end.reason = "Succeeded";
  CloseAttempt(job, pods, 0, kT0, end, kT0 + absl::Seconds(60), status);
  pods[0].node = "node-z";
  NoteAttemptPods(job, pods, 0, kT0, kT0, status);
  EXPECT_EQ(status.DebugString(), before.DebugString());
}

TEST(AttemptHistoryTest, TheNextAttemptsFirstStepSaysWhatTheRestartCost) {
  const model::Job job = Job();
  model::JobStatus status;
  std::vector<ObservedPod> pods = {Pod("ddp-worker-0", "node-a", 40)};
  AttemptEnd end;
  end.reason = "Failed";
  CloseAttempt(job, pods, 0, kT0, end, kT0 + absl::Seconds(30), status);
  // Attempt 1 runs, no report yet: nothing known.
  std::vector<ObservedPod> next = {Pod("ddp-worker-0", "node-b"), Pod("ddp-worker-1", "node-b")};
  for (ObservedPod& pod : next) pod.attempt = 1;
  NoteAttemptPods(job, next, 1, kT0 + absl::Seconds(31), std::nullopt, status);
  EXPECT_FALSE(status.coach().attempts(0).has_steps_lost());
  // It resumed from the checkpoint of step 30 (the lowest step seen): 10 steps done again.
  next[0].progress.emplace();
  next[0].progress->step = 33;
  next[1].progress.emplace();
  next[1].progress->step = 30;
  NoteAttemptPods(job, next, 1, kT0 + absl::Seconds(31), std::nullopt, status);
  EXPECT_EQ(status.coach().attempts(0).steps_lost(), 10);
  // Written once: later reports do not change it.
  next[1].progress->step = 50;
  NoteAttemptPods(job, next, 1, kT0 + absl::Seconds(31), std::nullopt, status);
  EXPECT_EQ(status.coach().attempts(0).steps_lost(), 10);
}

// A launcher says the lowest step its workers printed: the first report may come steps after the
// resume, and the steps done again are counted from the resume all the same.
TEST(AttemptHistoryTest, TheLaunchersFirstStepIsWhereTheNextAttemptResumed) {
  const model::Job job = Job();
  model::JobStatus status;
  std::vector<ObservedPod> pods = {Pod("ddp-worker-0", "node-a", 40)};
  AttemptEnd end;
  end.reason = "Disrupted";
  CloseAttempt(job, pods, 0, kT0, end, kT0 + absl::Seconds(30), status);
  std::vector<ObservedPod> next = {Pod("ddp-worker-0", "node-b")};
  next[0].attempt = 1;
  next[0].progress.emplace();
  next[0].progress->step = 45;  // reported after a burst of steps
  next[0].progress->first_step = 32;
  NoteAttemptPods(job, next, 1, kT0 + absl::Seconds(31), std::nullopt, status);
  EXPECT_EQ(status.coach().attempts(0).steps_lost(), 8);
}

TEST(AttemptHistoryTest, LastStepFallsBackToThisAttemptsStatusProgress) {
  const model::Job job = Job();
  model::JobStatus status;
  auto* progress = status.mutable_coach()->mutable_progress();
  progress->set_step(12);
  *progress->mutable_last_progress_time() = ToTimestamp(kT0 - absl::Seconds(1));
  // Older than the attempt: the previous attempt's step, not this one's.
  CloseAttempt(job, {}, 1, kT0, AttemptEnd{"Deleted", "", nullptr, "worker-0", false},
               kT0 + absl::Seconds(1), status);
  EXPECT_EQ(status.coach().attempts(0).last_step(), 0);
  EXPECT_EQ(status.coach().attempts(0).replica(), "worker-0");
  EXPECT_FALSE(status.coach().attempts(0).has_exit_code());

  *progress = {};
  status.mutable_coach()->mutable_progress()->set_step(33);
  *status.mutable_coach()->mutable_progress()->mutable_last_progress_time() =
      ToTimestamp(kT0 + absl::Seconds(3));
  CloseAttempt(job, {}, 2, kT0, AttemptEnd{"Evicted", "", nullptr, "", false},
               kT0 + absl::Seconds(4), status);
  EXPECT_EQ(status.coach().attempts(1).last_step(), 33);
}

TEST(AttemptHistoryTest, KeepsTheFirstAndTheLatestAttempts) {
  model::JobStatus status;
  for (int attempt = 0; attempt < api::v1::kMaxAttempts + 7; ++attempt) {
    OpenAttempt(status, attempt, kT0 + absl::Seconds(attempt));
  }
  const auto& attempts = status.coach().attempts();
  ASSERT_EQ(attempts.size(), api::v1::kMaxAttempts);
  EXPECT_EQ(attempts[0].attempt(), 0);
  EXPECT_EQ(attempts[1].attempt(), 8);
  EXPECT_EQ(attempts[api::v1::kMaxAttempts - 1].attempt(), api::v1::kMaxAttempts + 6);
  // Opening one that is there finds it.
  OpenAttempt(status, 8, kT0).set_reason("x");
  EXPECT_EQ(status.coach().attempts(1).reason(), "x");
  EXPECT_EQ(status.coach().attempts_size(), api::v1::kMaxAttempts);
}

TEST(AttemptHistoryTest, BoundsNodesAndNames) {
  model::JobStatus status;
  const model::Job job = Job();
  std::vector<ObservedPod> pods;
  for (int i = 0; i < api::v1::kMaxAttemptNodes + 10; ++i) {
    pods.push_back(Pod("ddp-worker-" + std::to_string(i), "node-" + std::to_string(i)));
  }
  pods.push_back(Pod("ddp-" + std::string(400, 'r'), std::string(400, 'n')));
  NoteAttemptPods(job, pods, 0, kT0, std::nullopt, status);
  EXPECT_EQ(static_cast<int>(status.coach().attempts(0).nodes().size()), api::v1::kMaxAttemptNodes);

  model::JobStatus other;
  AttemptEnd end;
  end.reason = "Failed";
  // A message of two-byte characters, cut inside one: the cut keeps whole characters.
  std::string message = "a";
  for (int i = 0; i < 600; ++i) message += "\xc3\xa9";
  end.message = message;
  end.pod = &pods.back();
  CloseAttempt(job, {pods.back()}, 0, kT0, end, kT0, other);
  const api::v1::JobAttempt& a = other.coach().attempts(0);
  EXPECT_EQ(a.message().size(), api::v1::kMaxAttemptMessageLength - 1);
  EXPECT_EQ(a.replica().size(), api::v1::kMaxAttemptNameLength);
  for (const auto& [replica, node] : a.nodes()) {
    EXPECT_LE(replica.size(), api::v1::kMaxAttemptNameLength);
    EXPECT_LE(node.size(), api::v1::kMaxAttemptNameLength);
  }
}

TEST(AttemptHistoryTest, AFailureSaysWhichRuleOrPodEndedTheAttempt) {
  std::vector<ObservedPod> pods = {Pod("ddp-master-0", "a"), Pod("ddp-worker-0", "a"),
                                   Pod("ddp-worker-1", "b")};
  pods[0].replica_type = "Master";
  pods[1].replica_type = pods[2].replica_type = "Worker";
  pods[1].phase = model::PodPhase::kFailed;
  pods[1].message = "OOMKilled";
  EXPECT_EQ(FailureEnd(api::v1::kJobFailedValidationReason, "", "", pods).reason, "Invalid");
  EXPECT_EQ(FailureEnd(api::v1::kJobStalledReason, "", "", pods).reason, "Stalled");
  EXPECT_EQ(FailureEnd("Failed", api::v1::kTrainJobDeadlineReason, "", pods).reason,
            "DeadlineExceeded");
  AttemptEnd oom = FailureEnd("Failed", "", "Worker", pods);
  EXPECT_EQ(oom.reason, "OOMKilled");
  EXPECT_EQ(oom.pod, &pods[1]);
  AttemptEnd none = FailureEnd("Failed", "", "Master", pods);
  EXPECT_EQ(none.reason, "Failed");
  EXPECT_EQ(none.pod, nullptr);
}

TEST(AttemptHistoryTest, AnAttemptStartsAtItsRestartAndRunsOnceEveryReplicaRan) {
  model::JobStatus status;
  EXPECT_EQ(AttemptStart(status, 0, kT0), kT0);
  *status.mutable_start_time() = ToTimestamp(kT0 - absl::Minutes(5));
  *status.mutable_coach()->mutable_restart_time() = ToTimestamp(kT0 - absl::Minutes(1));
  EXPECT_EQ(AttemptStart(status, 0, kT0), kT0 - absl::Minutes(5));
  EXPECT_EQ(AttemptStart(status, 1, kT0), kT0 - absl::Minutes(1));
  EXPECT_FALSE(AttemptRunningTime(status, kT0).has_value());
  *status.mutable_coach()->mutable_attempt_running_time() = ToTimestamp(kT0 - absl::Seconds(30));
  EXPECT_EQ(AttemptRunningTime(status, kT0), kT0 - absl::Seconds(30));
}

}  // namespace
}  // namespace coach::reconcile
