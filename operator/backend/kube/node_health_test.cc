#include "operator/backend/kube/node_health.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace coach::backend::kube {
namespace {

using nlohmann::json;

// A Node; ready "" has no Ready condition (registering).
json Node(const std::string& name, const std::string& ready) {
  json conditions = json::array({{{"type", "MemoryPressure"}, {"status", "False"}}});
  if (!ready.empty()) conditions.push_back({{"type", "Ready"}, {"status", ready}});
  return {{"metadata", {{"name", name}}}, {"status", {{"conditions", conditions}}}};
}

using Names = std::set<std::string>;

TEST(NodeNotReadyTest, ReadyConditionNotTrue) {
  EXPECT_FALSE(NodeNotReady(Node("a", "True")));
  EXPECT_TRUE(NodeNotReady(Node("a", "False")));
  EXPECT_TRUE(NodeNotReady(Node("a", "Unknown")));
  EXPECT_FALSE(NodeNotReady(Node("a", "")));
  EXPECT_FALSE(NodeNotReady(json::object()));
}

TEST(TrimNodeTest, KeepsTheNameAndReady) {
  json node = Node("a", "Unknown");
  node["status"]["images"] = json::array({{{"names", {"registry/big:1"}}, {"sizeBytes", 1}}});
  node["metadata"]["labels"] = {{"kubernetes.io/hostname", "a"}};
  EXPECT_EQ(TrimNode(node),
            json({{"metadata", {{"name", "a"}}},
                  {"status", {{"conditions", {{{"type", "Ready"}, {"status", "Unknown"}}}}}}}));
  EXPECT_TRUE(NodeNotReady(TrimNode(node)));
  EXPECT_FALSE(NodeNotReady(TrimNode(Node("b", ""))));
}

TEST(NodeHealthTest, NotReadyUnknownAndDeletedNodesAreLost) {
  NodeHealth h;
  EXPECT_EQ(h.Replace({Node("a", "True"), Node("b", "Unknown"), Node("c", "")}), Names{"b"});
  EXPECT_FALSE(h.Lost("a"));
  EXPECT_TRUE(h.Lost("b"));
  EXPECT_FALSE(h.Lost("c"));
  EXPECT_FALSE(h.Lost(""));
  // Never seen: perhaps newer than the cache.
  EXPECT_FALSE(h.Lost("new"));
  EXPECT_EQ(h.node_count(), 3u);

  EXPECT_EQ(h.OnNode(Node("a", "False"), false), Names{"a"});
  EXPECT_TRUE(h.Lost("a"));
  EXPECT_EQ(h.OnNode(Node("a", "False"), false), Names{});  // no change, no notice
  EXPECT_EQ(h.OnNode(Node("a", "True"), false), Names{"a"});
  EXPECT_FALSE(h.Lost("a"));

  EXPECT_EQ(h.OnNode(Node("a", "True"), true), Names{"a"});
  EXPECT_TRUE(h.Lost("a"));
  // The same name registers again.
  EXPECT_EQ(h.OnNode(Node("a", "True"), false), Names{"a"});
  EXPECT_FALSE(h.Lost("a"));
  // A NotReady node deleted stays lost: no change.
  EXPECT_EQ(h.OnNode(Node("b", "Unknown"), true), Names{});
  EXPECT_TRUE(h.Lost("b"));
}

TEST(NodeHealthTest, ARelistFindsDeletionsTheWatchMissed) {
  NodeHealth h;
  h.Replace({Node("a", "True"), Node("b", "True")});
  EXPECT_EQ(h.Replace({Node("b", "False"), Node("c", "True")}), (Names{"a", "b"}));
  EXPECT_TRUE(h.Lost("a"));
  EXPECT_TRUE(h.Lost("b"));
  EXPECT_FALSE(h.Lost("c"));
  EXPECT_EQ(h.Replace({Node("a", "True"), Node("b", "True"), Node("c", "True")}),
            (Names{"a", "b"}));
  EXPECT_FALSE(h.Lost("a"));
}

TEST(NodeHealthTest, RemembersABoundedNumberOfDeletedNodes) {
  NodeHealth h;
  for (size_t i = 0; i < kMaxDeletedNodes + 10; ++i) {
    const std::string name = "n" + std::to_string(i);
    h.OnNode(Node(name, "True"), false);
    h.OnNode(Node(name, "True"), true);
  }
  EXPECT_FALSE(h.Lost("n0"));  // forgotten: the oldest
  EXPECT_TRUE(h.Lost("n10"));
  EXPECT_TRUE(h.Lost("n" + std::to_string(kMaxDeletedNodes + 9)));
  EXPECT_EQ(h.node_count(), 0u);
}

// A node about to go says so by its remover's taint, which survives the trim; a notice coming
// or going is a change (the jobs on the node are reconciled).
TEST(NodeHealthTest, ADisruptionTaintIsTheNodesNotice) {
  json disrupted = Node("spot-1", "True");
  disrupted["spec"]["taints"] =
      json::array({{{"key", "example.com/gpu"}, {"effect", "NoSchedule"}},
                   {{"key", "karpenter.sh/disrupted"}, {"effect", "NoSchedule"}}});
  disrupted["spec"]["unschedulable"] = true;
  EXPECT_EQ(NodeDisruptionNotice(disrupted), "Karpenter is disrupting node spot-1");
  EXPECT_EQ(NodeDisruptionNotice(TrimNode(disrupted)), "Karpenter is disrupting node spot-1");
  EXPECT_EQ(TrimNode(disrupted)["spec"]["taints"].size(), 1u);
  json scaled = Node("b", "True");
  scaled["spec"]["taints"] = json::array({{{"key", "ToBeDeletedByClusterAutoscaler"}}});
  EXPECT_EQ(NodeDisruptionNotice(scaled), "the cluster autoscaler is removing node b");
  json cordoned = Node("c", "True");
  cordoned["spec"]["unschedulable"] = true;
  EXPECT_EQ(NodeDisruptionNotice(cordoned), "");
  EXPECT_FALSE(TrimNode(cordoned).contains("spec"));

  NodeHealth h;
  EXPECT_EQ(h.Replace({Node("spot-1", "True"), cordoned}), Names{});
  EXPECT_EQ(h.OnNode(disrupted, false), Names{"spot-1"});
  EXPECT_EQ(h.Notice("spot-1"), "Karpenter is disrupting node spot-1");
  EXPECT_FALSE(h.Lost("spot-1"));
  EXPECT_EQ(h.OnNode(disrupted, false), Names{});
  EXPECT_EQ(h.Replace({Node("spot-1", "True"), cordoned}), Names{"spot-1"});
  EXPECT_EQ(h.Notice("spot-1"), "");
  EXPECT_EQ(h.Replace({disrupted, cordoned}), Names{"spot-1"});
  EXPECT_EQ(h.OnNode(disrupted, true), Names{"spot-1"});  // lost, and no notice any more
  EXPECT_EQ(h.Notice("spot-1"), "");
  EXPECT_TRUE(h.Lost("spot-1"));
}

}  // namespace
}  // namespace coach::backend::kube
