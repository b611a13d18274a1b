#include "operator/reconcile/pending.h"

#include <gtest/gtest.h>

namespace coach::reconcile {
namespace {

using model::ObservedPod;

ObservedPod Waiting(const std::string& type, int index, const std::string& state,
                    const std::string& source, const std::string& nodeclaim,
                    const std::string& message) {
  ObservedPod p;
  p.name = type + std::to_string(index);
  p.replica_type = type;
  p.index = index;
  p.waiting = {state, source, "gpu-workloads", nodeclaim, message};
  return p;
}

TEST(PendingTest, NothingWaits) {
  ObservedPod running;
  running.phase = model::PodPhase::kRunning;
  EXPECT_FALSE(ReportPending({running, ObservedPod()}, true).has_value());
}

TEST(PendingTest, ProvisioningGroupsReplicas) {
  auto r = ReportPending(
      {Waiting("Master", 0, "provisioning", "karpenter", "gpu-workloads-x", "launching"),
       Waiting("Worker", 0, "provisioning", "karpenter", "gpu-workloads-x", "launching"),
       Waiting("Worker", 1, "provisioning", "karpenter", "gpu-workloads-y", "node ready")},
      true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, "Normal");
  EXPECT_EQ(r->reason, "WaitingForCapacity");
  EXPECT_EQ(r->message,
            "Master-0, Worker-0: NodeClaim gpu-workloads-x launching (NodePool gpu-workloads); "
            "Worker-1: NodeClaim gpu-workloads-y node ready (NodePool gpu-workloads)");
}

TEST(PendingTest, KarpenterRefusalIsAWarning) {
  auto r = ReportPending(
      {Waiting("Master", 0, "provisioning", "karpenter", "gpu-workloads-x", "launching"),
       Waiting("Worker", 0, "unschedulable", "karpenter", "",
               "no instance type has enough resources, resources={\"nvidia.com/gpu\":\"16\"}")},
      true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, "Warning");
  EXPECT_EQ(r->reason, "Unschedulable");
  EXPECT_EQ(r->message,
            "Master-0: NodeClaim gpu-workloads-x launching (NodePool gpu-workloads); Worker-0: "
            "Karpenter: no instance type has enough resources, resources={\"nvidia.com/gpu\":"
            "\"16\"} (NodePool gpu-workloads)");
}

TEST(PendingTest, SchedulerRefusalWaitsForKarpenterOnlyWithKarpenter) {
  const ObservedPod p = Waiting("Worker", 0, "unschedulable", "scheduler", "",
                                "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  auto with = ReportPending({p}, true);
  ASSERT_TRUE(with.has_value());
  EXPECT_EQ(with->reason, "WaitingForCapacity");
  auto without = ReportPending({p}, false);
  ASSERT_TRUE(without.has_value());
  EXPECT_EQ(without->type, "Warning");
  EXPECT_EQ(without->message,
            "Worker-0: Unschedulable: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

TEST(PendingTest, DeletingAndBoundPodsDoNotCount) {
  ObservedPod deleting = Waiting("Worker", 0, "unschedulable", "scheduler", "", "x");
  deleting.deleting = true;
  ObservedPod running = Waiting("Worker", 1, "unschedulable", "scheduler", "", "x");
  running.phase = model::PodPhase::kRunning;
  EXPECT_FALSE(ReportPending({deleting, running}, false).has_value());
}

TEST(PendingTest, TextsRoundTrip) {
  auto r = ReportPending(
      {Waiting("Master", 0, "provisioning", "karpenter", "gpu-workloads-x", "launching"),
       Waiting("Worker", 0, "unschedulable", "karpenter", "", "a; b, c: d"),
       Waiting("Worker", 1, "provisioning", "karpenter", "gpu-workloads-x", "launching")},
      true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->texts.size(), 2u);
  EXPECT_EQ(PendingTexts(r->message), r->texts);
  EXPECT_TRUE(PendingTexts("PyTorchJob x is created.").empty());
  EXPECT_TRUE(PendingTexts("").empty());
}

TEST(PendingTest, MessageIsBounded) {
  std::vector<ObservedPod> pods;
  for (int i = 0; i < 50; ++i) {
    pods.push_back(
        Waiting("Worker", i, "unschedulable", "karpenter", "", "reason " + std::to_string(i)));
  }
  auto r = ReportPending(pods, true);
  ASSERT_TRUE(r.has_value());
  EXPECT_LE(r->message.size(), 1000u);
}

}  // namespace
}  // namespace coach::reconcile
