#include "operator/backend/kube/queue_facts.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace coach::backend::kube {
namespace {

using nlohmann::json;

// Kueue v0.19.0's message for a Workload that does not fit, as it wrote it on the test
// control plane (tools/suites/kueue.sh).
constexpr char kNoQuota[] =
    "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor "
    "default-flavor, 2 more needed";

// A pending Workload (kueue.x-k8s.io/v1beta2) owned by TrainJob `job` (uid `uid`).
json Workload(const std::string& name, const std::string& job, const std::string& uid,
              const std::string& created = "2026-11-27T19:00:00Z") {
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata",
           {{"name", name},
            {"namespace", "team-a"},
            {"creationTimestamp", created},
            {"ownerReferences", json::array({{{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
                                              {"kind", "TrainJob"},
                                              {"name", job},
                                              {"uid", uid},
                                              {"controller", true},
                                              {"blockOwnerDeletion", true}}})}}},
          {"spec", {{"queueName", "user-queue"}, {"active", true}}},
          {"status",
           {{"conditions", json::array({{{"type", "QuotaReserved"},
                                         {"status", "False"},
                                         {"reason", "Pending"},
                                         {"message", kNoQuota}}})}}}};
}

json Admitted(json w) {
  w["status"]["admission"] = {{"clusterQueue", "cluster-queue"}};
  w["status"]["conditions"] =
      json::array({{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"}},
                   {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}}});
  return w;
}

json LocalQueue(const std::string& name, const std::string& cq) {
  return {{"metadata", {{"name", name}, {"namespace", "team-a"}}},
          {"spec", {{"clusterQueue", cq}}}};
}

TEST(ParseWorkloadTest, PendingWorkload) {
  std::optional<WorkloadFacts> f = ParseWorkload(Workload("trainjob-a-1", "a", "u1"));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->ns, "team-a");
  EXPECT_EQ(f->owner_kind, "TrainJob");
  EXPECT_EQ(f->owner_name, "a");
  EXPECT_EQ(f->owner_uid, "u1");
  EXPECT_EQ(f->queue.workload, "trainjob-a-1");
  EXPECT_EQ(f->queue.local_queue, "user-queue");
  EXPECT_EQ(f->queue.cluster_queue, "");
  EXPECT_FALSE(f->queue.quota_reserved);
  EXPECT_FALSE(f->queue.admitted);
  EXPECT_TRUE(f->queue.active);
  EXPECT_EQ(f->queue.message, kNoQuota);
  EXPECT_EQ(f->queue.evicted, "");
}

TEST(ParseWorkloadTest, AdmittedWorkloadHasItsClusterQueueAndNoMessage) {
  std::optional<WorkloadFacts> f = ParseWorkload(Admitted(Workload("w", "a", "u1")));
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(f->queue.quota_reserved);
  EXPECT_TRUE(f->queue.admitted);
  EXPECT_EQ(f->queue.cluster_queue, "cluster-queue");
  EXPECT_EQ(f->queue.message, "");
}

TEST(ParseWorkloadTest, ReservedWaitingForChecksEvictedAndInactive) {
  json w = Workload("w", "a", "u1");
  w["spec"]["active"] = false;
  w["status"]["conditions"] =
      json::array({{{"type", "QuotaReserved"}, {"status", "True"}},
                   {{"type", "Admitted"}, {"status", "False"}, {"message", "checks pending"}},
                   {{"type", "Evicted"}, {"status", "True"}, {"reason", "Preempted"}}});
  std::optional<WorkloadFacts> f = ParseWorkload(w);
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(f->queue.quota_reserved);
  EXPECT_FALSE(f->queue.admitted);
  EXPECT_FALSE(f->queue.active);
  EXPECT_EQ(f->queue.message, "checks pending");
  EXPECT_EQ(f->queue.evicted, "Preempted");
}

TEST(ParseWorkloadTest, IgnoresWorkloadsOfOtherKindsAndMalformedOwners) {
  json batch = Workload("job-x", "x", "u");
  batch["metadata"]["ownerReferences"][0]["apiVersion"] = "batch/v1";
  batch["metadata"]["ownerReferences"][0]["kind"] = "Job";
  EXPECT_FALSE(ParseWorkload(batch).has_value());
  json not_controller = Workload("w", "a", "u");
  not_controller["metadata"]["ownerReferences"][0]["controller"] = false;
  EXPECT_FALSE(ParseWorkload(not_controller).has_value());
  json odd = Workload("w", "a", "u");
  odd["metadata"]["ownerReferences"] = "not a list";
  odd["status"]["conditions"] = 7;
  EXPECT_FALSE(ParseWorkload(odd).has_value());
  json no_status = Workload("w", "a", "u");
  no_status.erase("status");
  std::optional<WorkloadFacts> f = ParseWorkload(no_status);
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->queue.quota_reserved);
  EXPECT_EQ(f->queue.message, "");
}

TEST(TrimWorkloadTest, KeepsWhatParseWorkloadReads) {
  json w = Admitted(Workload("w", "a", "u1"));
  w["spec"]["podSets"] = json::array({{{"name", "node"}, {"count", 2}}});
  w["status"]["admission"]["podSetAssignments"] = json::array({{{"name", "node"}}});
  w["metadata"]["managedFields"] = json::array({{{"manager", "kueue"}}});
  const json trimmed = TrimWorkload(w);
  EXPECT_FALSE(trimmed["spec"].contains("podSets"));
  EXPECT_FALSE(trimmed["metadata"].contains("managedFields"));
  EXPECT_FALSE(trimmed["status"]["admission"].contains("podSetAssignments"));
  std::optional<WorkloadFacts> a = ParseWorkload(w);
  std::optional<WorkloadFacts> b = ParseWorkload(trimmed);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(b->owner_uid, a->owner_uid);
  EXPECT_EQ(b->created, a->created);
  EXPECT_EQ(b->queue.cluster_queue, "cluster-queue");
  EXPECT_EQ(b->queue.local_queue, "user-queue");
  EXPECT_TRUE(b->queue.admitted);
  EXPECT_EQ(TrimWorkload(json("junk"))["metadata"], nullptr);
}

TEST(QueueFactsTest, ExplainJoinsTheLocalQueuesClusterQueue) {
  QueueFacts facts;
  EXPECT_EQ(facts.OnWorkload(Workload("w", "a", "u1"), false), std::set<std::string>{"team-a/a"});
  std::optional<model::ObservedState::Queue> q = facts.Explain("team-a", "TrainJob", "a", "u1");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->cluster_queue, "");
  // The LocalQueue arrives: the job in it is told.
  EXPECT_EQ(facts.OnLocalQueue(LocalQueue("user-queue", "cluster-queue"), false),
            std::set<std::string>{"team-a/a"});
  EXPECT_EQ(facts.Explain("team-a", "TrainJob", "a", "u1")->cluster_queue, "cluster-queue");
  // The same again: nothing changed.
  EXPECT_TRUE(facts.OnLocalQueue(LocalQueue("user-queue", "cluster-queue"), false).empty());
  // Another kind, namespace or uid of that name is another job.
  EXPECT_FALSE(facts.Explain("team-a", "PyTorchJob", "a", "u1").has_value());
  EXPECT_FALSE(facts.Explain("team-b", "TrainJob", "a", "u1").has_value());
  EXPECT_FALSE(facts.Explain("team-a", "TrainJob", "a", "u2").has_value());
  EXPECT_TRUE(facts.Explain("team-a", "TrainJob", "a", "").has_value());
  // Admitted: the admission's ClusterQueue.
  facts.OnWorkload(Admitted(Workload("w", "a", "u1")), false);
  EXPECT_TRUE(facts.Explain("team-a", "TrainJob", "a", "u1")->admitted);
  // Deleted: no facts.
  EXPECT_EQ(facts.OnWorkload(Workload("w", "a", "u1"), true), std::set<std::string>{"team-a/a"});
  EXPECT_FALSE(facts.Explain("team-a", "TrainJob", "a", "u1").has_value());
  EXPECT_EQ(facts.workload_count(), 0u);
}

TEST(QueueFactsTest, NewestLiveWorkloadWins) {
  QueueFacts facts;
  json old_one = Admitted(Workload("w-old", "a", "u1", "2026-11-27T19:00:00Z"));
  old_one["metadata"]["deletionTimestamp"] = "2026-11-27T19:05:00Z";
  facts.OnWorkload(old_one, false);
  facts.OnWorkload(Workload("w-new", "a", "u1", "2026-11-27T19:04:00Z"), false);
  EXPECT_EQ(facts.Explain("team-a", "TrainJob", "a", "u1")->workload, "w-new");
  facts.OnWorkload(Workload("w-newer", "a", "u1", "2026-11-27T19:06:00Z"), false);
  EXPECT_EQ(facts.Explain("team-a", "TrainJob", "a", "u1")->workload, "w-newer");
}

TEST(QueueFactsTest, ReplaceDropsWhatTheListNoLongerHolds) {
  QueueFacts facts;
  facts.OnWorkload(Workload("w1", "a", "u1"), false);
  facts.OnWorkload(Workload("w2", "b", "u2"), false);
  facts.ReplaceLocalQueues("team-a", {LocalQueue("user-queue", "cq-1")});
  EXPECT_EQ(facts.ReplaceWorkloads("team-a", {Workload("w2", "b", "u2")}),
            (std::set<std::string>{"team-a/a", "team-a/b"}));
  EXPECT_FALSE(facts.Explain("team-a", "TrainJob", "a", "u1").has_value());
  EXPECT_EQ(facts.Explain("team-a", "TrainJob", "b", "u2")->cluster_queue, "cq-1");
  // The LocalQueue now points elsewhere: the job in it is told.
  EXPECT_EQ(facts.ReplaceLocalQueues("team-a", {LocalQueue("user-queue", "cq-2")}),
            std::set<std::string>{"team-a/b"});
  EXPECT_EQ(facts.Explain("team-a", "TrainJob", "b", "u2")->cluster_queue, "cq-2");
  EXPECT_EQ(facts.ReplaceLocalQueues("", {}), std::set<std::string>{"team-a/b"});
  EXPECT_EQ(facts.local_queue_count(), 0u);
}

}  // namespace
}  // namespace coach::backend::kube
