#include "operator/backend/kube/scheduling_facts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "operator/backend/kube/object_fields.h"
#include "operator/backend/kube/pod_observation.h"

namespace coach::backend::kube {
namespace {

using nlohmann::json;

// Karpenter v1.14.1's messages, as its kwok provider wrote them on the test control plane.
constexpr char kNoInstanceType[] =
    "Failed to schedule pod, incompatible requirements, key karpenter.sh/nodepool, "
    "karpenter.sh/nodepool In [gpu-workloads] not in karpenter.sh/nodepool In "
    "[training-workloads]; no instance type has enough resources, "
    "requirements=karpenter.kwok.sh/instance-family In [g4dn g5 p4d], "
    "karpenter.sh/capacity-type In [on-demand spot], karpenter.sh/nodepool In [gpu-workloads], "
    "resources={\"nvidia.com/gpu\":\"16\",\"pods\":\"1\"}";

json Pod(const std::string& name, const std::string& uid) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", uid},
            {"creationTimestamp", "2026-11-24T03:16:06Z"}}},
          {"spec",
           {{"nodeSelector", {{"karpenter.sh/nodepool", "gpu-workloads"}}},
            {"containers", json::array({{{"name", "pytorch"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

json Unschedulable(json pod, const std::string& message) {
  pod["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", message},
                                              {"lastTransitionTime", "2026-11-24T03:16:06Z"}}});
  return pod;
}

json Event(const std::string& pod, const std::string& uid, const std::string& reason,
           const std::string& message, const std::string& at) {
  return {
      {"metadata", {{"name", pod + ".1"}, {"namespace", "default"}}},
      {"involvedObject", {{"kind", "Pod"}, {"name", pod}, {"namespace", "default"}, {"uid", uid}}},
      {"reason", reason},
      {"message", message},
      {"source", {{"component", "karpenter"}}},
      {"lastTimestamp", at}};
}

json NodeClaim(const std::string& name, std::vector<std::pair<std::string, std::string>> conds) {
  json c = json::array();
  for (const auto& [type, status] : conds) c.push_back({{"type", type}, {"status", status}});
  return {{"metadata", {{"name", name}, {"labels", {{"karpenter.sh/nodepool", "gpu-workloads"}}}}},
          {"status", {{"conditions", c}}}};
}

TEST(SchedulingFactsTest, ShortReasonDropsOtherPoolsAndRequirements) {
  EXPECT_EQ(ShortKarpenterReason(kNoInstanceType),
            "no instance type has enough resources, resources={\"nvidia.com/gpu\":\"16\","
            "\"pods\":\"1\"}");
  // Only the NodePool clause: kept (it is the reason).
  EXPECT_EQ(ShortKarpenterReason("Failed to schedule pod, incompatible requirements, key "
                                 "karpenter.sh/nodepool, karpenter.sh/nodepool In [x] not in "
                                 "karpenter.sh/nodepool In [y]"),
            "incompatible requirements, key karpenter.sh/nodepool, karpenter.sh/nodepool In [x] "
            "not in karpenter.sh/nodepool In [y]");
  EXPECT_LE(ShortKarpenterReason(std::string(1000, 'x')).size(), 400u);
}

TEST(SchedulingFactsTest, NominatedNodeClaim) {
  EXPECT_EQ(NominatedNodeClaim("Pod should schedule on: nodeclaim/gpu-workloads-smzff"),
            "gpu-workloads-smzff");
  EXPECT_EQ(NominatedNodeClaim("Pod should schedule on: nodeclaim/a-b, node/n1"), "a-b");
  EXPECT_EQ(NominatedNodeClaim("Pod should schedule on: node/n1"), "");
}

TEST(SchedulingFactsTest, NodeClaimProgress) {
  EXPECT_EQ(NodeClaimProgress(NodeClaim("a", {})), "launching");
  EXPECT_EQ(NodeClaimProgress(NodeClaim("a", {{"Launched", "True"}})),
            "launched, node registering");
  EXPECT_EQ(NodeClaimProgress(NodeClaim("a", {{"Launched", "True"}, {"Registered", "True"}})),
            "node initializing");
  EXPECT_EQ(NodeClaimProgress(NodeClaim(
                "a", {{"Launched", "True"}, {"Registered", "True"}, {"Initialized", "True"}})),
            "node ready");
  json failed = NodeClaim("a", {{"Launched", "False"}});
  failed["status"]["conditions"][0]["message"] = "InsufficientCapacityError: no g5 in us-east-1a";
  EXPECT_EQ(NodeClaimProgress(failed),
            "launch failed: InsufficientCapacityError: no g5 in us-east-1a");
}

TEST(SchedulingFactsTest, SchedulerOnlyWithoutKarpenter) {
  SchedulingFacts facts;
  auto w = facts.Explain(Unschedulable(Pod("p", "u1"),
                                       "0/3 nodes are available: 3 Insufficient "
                                       "nvidia.com/gpu."));
  EXPECT_EQ(w.state, "unschedulable");
  EXPECT_EQ(w.source, "scheduler");
  EXPECT_EQ(w.nodepool, "gpu-workloads");
  EXPECT_EQ(w.message, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
  // Pending without a condition yet: nothing known.
  EXPECT_EQ(facts.Explain(Pod("p", "u1")).state, "");
}

TEST(SchedulingFactsTest, KarpenterFailureWinsOverScheduler) {
  SchedulingFacts facts;
  auto changed = facts.OnEvent(
      Event("p", "u1", "FailedScheduling", kNoInstanceType, "2026-11-24T03:16:07Z"), false);
  EXPECT_EQ(changed, std::set<std::string>{"default/p"});
  auto w = facts.Explain(Unschedulable(Pod("p", "u1"), "0/0 nodes are available"));
  EXPECT_EQ(w.state, "unschedulable");
  EXPECT_EQ(w.source, "karpenter");
  EXPECT_NE(w.message.find("no instance type has enough resources"), std::string::npos);
  // Another pod of the same name (new UID) does not inherit it.
  EXPECT_EQ(facts.Explain(Unschedulable(Pod("p", "u2"), "x")).source, "scheduler");
  // The same event again (Karpenter's repeat): no change to report.
  EXPECT_TRUE(
      facts
          .OnEvent(Event("p", "u1", "FailedScheduling", kNoInstanceType, "2026-11-24T03:16:17Z"),
                   false)
          .empty());
}

TEST(SchedulingFactsTest, NominationFollowsTheNodeClaim) {
  SchedulingFacts facts;
  facts.OnEvent(Event("p", "u1", "Nominated", "Pod should schedule on: nodeclaim/gpu-workloads-x",
                      "2026-11-24T03:16:08Z"),
                false);
  auto w = facts.Explain(Pod("p", "u1"));
  EXPECT_EQ(w.state, "provisioning");
  EXPECT_EQ(w.nodeclaim, "gpu-workloads-x");
  EXPECT_EQ(w.message, "launching");
  EXPECT_EQ(facts.OnNodeClaim(NodeClaim("gpu-workloads-x", {{"Launched", "True"}}), false),
            std::set<std::string>{"default/p"});
  EXPECT_EQ(facts.Explain(Pod("p", "u1")).message, "launched, node registering");
  // Unchanged NodeClaim: nobody to notify.
  EXPECT_TRUE(
      facts.OnNodeClaim(NodeClaim("gpu-workloads-x", {{"Launched", "True"}}), false).empty());
  // An older FailedScheduling (a re-list in another order) does not replace the nomination.
  EXPECT_TRUE(
      facts
          .OnEvent(Event("p", "u1", "FailedScheduling", kNoInstanceType, "2026-11-24T03:16:01Z"),
                   false)
          .empty());
  EXPECT_EQ(facts.Explain(Pod("p", "u1")).state, "provisioning");
  // Bound to its node: no longer waiting.
  json bound = Pod("p", "u1");
  bound["spec"]["nodeName"] = "n1";
  EXPECT_EQ(facts.Explain(bound).state, "");
}

TEST(SchedulingFactsTest, ReplaceEventsKeepsOtherNamespaces) {
  SchedulingFacts facts;
  json other = Event("q", "u9", "Nominated", "nodeclaim/c", "2026-11-24T03:16:08Z");
  other["involvedObject"]["namespace"] = "team";
  facts.OnEvent(other, false);
  facts.ReplaceEvents(
      "default",
      {Event("p", "u1", "FailedScheduling", kNoInstanceType, "2026-11-24T03:16:07Z"),
       Event("p", "u1", "Nominated", "nodeclaim/gpu-workloads-x", "2026-11-24T03:16:09Z")});
  EXPECT_EQ(facts.pod_count(), 2u);
  EXPECT_EQ(facts.Explain(Pod("p", "u1")).state, "provisioning");  // the newer of the two
}

TEST(SchedulingFactsTest, TrimKeepsWhatExplainReads) {
  json pod = Unschedulable(Pod("p", "u1"), "0/1 nodes are available");
  pod["status"]["conditions"].push_back({{"type", "Ready"}, {"status", "False"}});
  pod["spec"]["nodeSelector"]["other"] = "x";
  const json trimmed = Trim(pod, true);
  EXPECT_EQ(trimmed["spec"]["nodeSelector"], json({{"karpenter.sh/nodepool", "gpu-workloads"}}));
  EXPECT_EQ(trimmed["status"]["conditions"].size(), 1u);
  SchedulingFacts facts;
  EXPECT_EQ(facts.Explain(trimmed).message, "0/1 nodes are available");
}

TEST(SchedulingFactsTest, ScheduledAt) {
  json pod = Pod("p", "u1");
  EXPECT_FALSE(ScheduledAt(pod).has_value());
  pod["status"]["conditions"] = json::array({{{"type", "PodScheduled"},
                                              {"status", "True"},
                                              {"lastTransitionTime", "2026-11-24T03:16:09Z"}}});
  ASSERT_TRUE(ScheduledAt(pod).has_value());
  EXPECT_EQ(*ScheduledAt(pod) - ParseTime("2026-11-24T03:16:06Z"), absl::Seconds(3));
}

}  // namespace
}  // namespace coach::backend::kube
