#include "operator/reconcile/elastic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/v1/coach_status.h"
#include "operator/model/testing/job_builder.h"

namespace coach::reconcile {
namespace {

using model::ObservedPod;
using model::PodPhase;
using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1000);

ObservedPod Worker(int index, PodPhase phase) {
  ObservedPod pod;
  pod.name = "e-worker-" + std::to_string(index);
  pod.replica_type = "Worker";
  pod.index = index;
  pod.phase = phase;
  return pod;
}

std::vector<ObservedPod> Workers(std::vector<PodPhase> phases) {
  std::vector<ObservedPod> pods;
  for (size_t i = 0; i < phases.size(); ++i) pods.push_back(Worker(static_cast<int>(i), phases[i]));
  return pods;
}

TEST(ElasticTest, TheRangeIsTorchrunsNnodes) {
  using testing::MakePyTorchJob;
  auto range = ElasticWorkers(MakePyTorchJob("ns", "e").Workers(3).Elastic(2, 4).Build());
  ASSERT_TRUE(range);
  EXPECT_EQ(range->min, 2);
  EXPECT_EQ(range->max, 4);
  range = ElasticWorkers(MakePyTorchJob("ns", "e").Workers(3).Elastic(2, std::nullopt).Build());
  ASSERT_TRUE(range);
  EXPECT_EQ(range->max, 2);
  range = ElasticWorkers(
      MakePyTorchJob("ns", "e").Workers(3).Elastic(std::nullopt, std::nullopt).Build());
  ASSERT_TRUE(range);
  EXPECT_EQ(range->min, 3);
  EXPECT_EQ(range->max, 3);
  EXPECT_FALSE(ElasticWorkers(MakePyTorchJob("ns", "e").Master(1).Workers(2).Build()));
}

TEST(ElasticTest, ALossIsAbsorbedOnlyAboveTheMinimumOfARange) {
  EXPECT_TRUE(AbsorbsWorkerLoss({2, 3}, 2));
  EXPECT_FALSE(AbsorbsWorkerLoss({2, 3}, 1));
  // A fixed size (N:N) cannot train with fewer: torchrun waits for the lost node.
  EXPECT_FALSE(AbsorbsWorkerLoss({3, 3}, 3));
}

TEST(ElasticTest, ChangesAreCountedFromTheFullSizeOnWithTheStepAndWhy) {
  model::JobStatus status;
  const ElasticRange range{2, 3};
  // Starting up: Workers come one by one; nothing is a change yet.
  EXPECT_FALSE(
      NoteWorkers(range, 3, Workers({PodPhase::kRunning, PodPhase::kPending}), kStart, status));
  EXPECT_EQ(status.coach().elastic().workers(), 1);
  EXPECT_EQ(status.coach().elastic().changes_size(), 0);
  EXPECT_FALSE(NoteWorkers(range, 3,
                           Workers({PodPhase::kRunning, PodPhase::kRunning, PodPhase::kRunning}),
                           kStart, status));
  ASSERT_EQ(status.coach().elastic().changes_size(), 1);
  EXPECT_EQ(status.coach().elastic().changes(0).workers(), 3);
  EXPECT_EQ(status.coach().elastic().min_workers(), 2);
  EXPECT_EQ(status.coach().elastic().max_workers(), 3);

  // Worker 1 is killed: the others train on.
  status.mutable_coach()->mutable_progress()->set_step(7);
  auto lost = Workers({PodPhase::kRunning, PodPhase::kFailed, PodPhase::kRunning});
  lost[1].exit_code = 137;
  auto event = NoteWorkers(range, 3, lost, kStart + absl::Seconds(10), status);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->type, "Normal");
  EXPECT_EQ(event->reason, kElasticShrinkReason);
  EXPECT_THAT(event->message, HasSubstr("Worker replica 1 exited with code 137: training goes on "
                                        "with 2 of 3 Workers (elasticPolicy 2:3)"));
  ASSERT_EQ(status.coach().elastic().changes_size(), 2);
  const auto& shrink = status.coach().elastic().changes(1);
  EXPECT_EQ(shrink.workers(), 2);
  EXPECT_EQ(shrink.step(), 7);
  EXPECT_EQ(shrink.why(), "Worker replica 1 exited with code 137");
  EXPECT_EQ(shrink.time().seconds(), 1010);

  // The same count again is no change; its replacement waiting is still two.
  EXPECT_FALSE(NoteWorkers(range, 3,
                           Workers({PodPhase::kRunning, PodPhase::kPending, PodPhase::kRunning}),
                           kStart + absl::Seconds(11), status));
  EXPECT_EQ(status.coach().elastic().changes_size(), 2);

  // It runs: the job grows back.
  event =
      NoteWorkers(range, 3, Workers({PodPhase::kRunning, PodPhase::kRunning, PodPhase::kRunning}),
                  kStart + absl::Seconds(40), status);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->reason, kElasticGrowReason);
  EXPECT_EQ(status.coach().elastic().changes(2).workers(), 3);
  EXPECT_EQ(status.coach().elastic().workers(), 3);

  // Below the minimum it is a warning: torchrun cannot train.
  auto two_lost = Workers({PodPhase::kRunning, PodPhase::kPending, PodPhase::kFailed});
  two_lost[2].disruption = "evicted: node drained";
  two_lost[1].deleting = true;
  event = NoteWorkers(range, 3, two_lost, kStart + absl::Seconds(50), status);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->type, "Warning");
  EXPECT_THAT(event->message, HasSubstr("Worker replica 2 is gone (evicted: node drained)"));
  EXPECT_THAT(event->message, HasSubstr("fewer than the 2 that elasticPolicy 2:3 needs"));
}

TEST(ElasticTest, ASuspendedJobCountsAgainOnceAllItsWorkersRun) {
  model::JobStatus status;
  const ElasticRange range{2, 3};
  const auto all = Workers({PodPhase::kRunning, PodPhase::kRunning, PodPhase::kRunning});
  NoteWorkers(range, 3, all, kStart, status);
  NoteSuspended(kStart + absl::Seconds(5), status);
  EXPECT_EQ(status.coach().elastic().workers(), 0);
  ASSERT_EQ(status.coach().elastic().changes_size(), 2);
  EXPECT_EQ(status.coach().elastic().changes(1).why(), "the job is suspended");
  // Resumed: the Workers come back one by one, no change, no event, until all run.
  EXPECT_FALSE(NoteWorkers(range, 3, Workers({PodPhase::kRunning, PodPhase::kPending}),
                           kStart + absl::Seconds(9), status));
  EXPECT_EQ(status.coach().elastic().changes_size(), 2);
  EXPECT_FALSE(NoteWorkers(range, 3, all, kStart + absl::Seconds(10), status));
  ASSERT_EQ(status.coach().elastic().changes_size(), 3);
  EXPECT_EQ(status.coach().elastic().changes(2).workers(), 3);
  // A job that never ran all its Workers has nothing to say when suspended.
  model::JobStatus fresh;
  NoteSuspended(kStart, fresh);
  EXPECT_FALSE(fresh.coach().has_elastic());
}

TEST(ElasticTest, TheFirstAndTheLatestChangesAreKept) {
  model::JobStatus status;
  const ElasticRange range{1, 2};
  const auto full = Workers({PodPhase::kRunning, PodPhase::kRunning});
  const auto less = Workers({PodPhase::kRunning, PodPhase::kPending});
  NoteWorkers(range, 2, full, kStart, status);
  for (int i = 1; i <= 50; ++i) {
    NoteWorkers(range, 2, i % 2 ? less : full, kStart + absl::Seconds(i), status);
  }
  const auto& changes = status.coach().elastic().changes();
  ASSERT_EQ(changes.size(), api::v1::kMaxWorkerCountChanges);
  EXPECT_EQ(changes[0].time().seconds(), 1000);
  EXPECT_EQ(changes[changes.size() - 1].time().seconds(), 1050);
  EXPECT_EQ(changes[1].time().seconds(), 1050 - api::v1::kMaxWorkerCountChanges + 2);
}

// A TrainJob's node pods play the Workers' part: only they count, and the words name them.
TEST(ElasticTest, ATrainJobsNodePodsAreItsElasticMembers) {
  const ElasticRange range{2, 3, "node", "coach.dev/elastic-min-nodes"};
  auto pods = Workers({PodPhase::kRunning, PodPhase::kRunning, PodPhase::kRunning});
  EXPECT_EQ(RunningWorkers(range, pods), 0) << "Worker pods are no nodes";
  for (ObservedPod& p : pods) p.replica_type = "node";
  ObservedPod initializer = Worker(0, PodPhase::kRunning);
  initializer.replica_type = "dataset-initializer";
  pods.push_back(initializer);
  EXPECT_EQ(RunningWorkers(range, pods), 3);

  model::JobStatus status;
  EXPECT_FALSE(NoteWorkers(range, 3, pods, kStart, status));
  EXPECT_EQ(status.coach().elastic().changes(0).why(), "all 3 nodes run");
  pods[2].phase = PodPhase::kFailed;
  pods[2].disruption = "node gone";
  auto event = NoteWorkers(range, 3, pods, kStart + absl::Seconds(1), status);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->reason, kElasticShrinkReason);
  EXPECT_EQ(event->message,
            "node replica 2 is gone (node gone): training goes on with 2 of 3 nodes "
            "(coach.dev/elastic-min-nodes 2:3) until the others run again");
  pods[2].phase = PodPhase::kRunning;
  event = NoteWorkers(range, 3, pods, kStart + absl::Seconds(2), status);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->reason, kElasticGrowReason);
  EXPECT_EQ(event->message,
            "3 of 3 nodes run (coach.dev/elastic-min-nodes 2:3): the nodes that joined train "
            "with the others");

  // Training over, the node pods finish one by one: no shrink.
  pods[0].phase = PodPhase::kSucceeded;
  EXPECT_FALSE(NoteWorkers(range, 3, pods, kStart + absl::Seconds(3), status));
  pods[1].phase = PodPhase::kSucceeded;
  EXPECT_FALSE(NoteWorkers(range, 3, pods, kStart + absl::Seconds(4), status));
  EXPECT_EQ(status.coach().elastic().changes_size(), 3);
  EXPECT_EQ(status.coach().elastic().workers(), 3);
}

}  // namespace
}  // namespace coach::reconcile
