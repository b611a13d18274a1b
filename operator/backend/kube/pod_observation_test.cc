#include "operator/backend/kube/pod_observation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/testing/job_builder.h"

namespace coach::backend::kube {
namespace {

using nlohmann::json;

json WorkerPod() {
  return {{"metadata",
           {{"name", "j-worker-0"},
            {"namespace", "ns"},
            {"uid", "u1"},
            {"labels",
             {{"training.kubeflow.org/job-name", "j"},
              {"training.kubeflow.org/replica-type", "worker"},
              {"training.kubeflow.org/replica-index", "0"}}},
            {"creationTimestamp", "2026-11-24T03:16:06Z"}}},
          {"spec", {{"nodeName", "node-a"}, {"containers", {{{"name", "pytorch"}}}}}},
          {"status", {{"phase", "Running"}}}};
}

json WithCondition(json pod, const std::string& type, const std::string& status,
                   const std::string& reason, const std::string& message) {
  pod["status"]["conditions"].push_back(
      {{"type", type}, {"status", status}, {"reason", reason}, {"message", message}});
  return pod;
}

json WithReason(json pod, const std::string& reason, const std::string& message) {
  pod["status"]["phase"] = "Failed";
  pod["status"]["reason"] = reason;
  pod["status"]["message"] = message;
  return pod;
}

model::ObservedPod Observe(const json& pod) {
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Workers(1).Build();
  // Through Trim, as the cache keeps it: what the facts need must survive it.
  return ToObservedPod(job, Trim(pod, true), "pytorch");
}

struct DisruptionCase {
  std::string name;
  json pod;
  std::string want;
};

TEST(PodDisruptionTest, WordsTheReasonsTheClusterGives) {
  const std::string pressure =
      "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. ";
  const std::vector<DisruptionCase> cases = {
      {"running, nothing said", WorkerPod(), ""},
      {"failed by the program", WithReason(WorkerPod(), "", ""), ""},
      {"deadline (the job's own activeDeadlineSeconds)",
       WithReason(WorkerPod(), "DeadlineExceeded", "Pod was active on the node longer than..."),
       ""},
      // The kubelet's eviction writes both; status.reason is the more specific.
      {"kubelet eviction",
       WithCondition(WithReason(WorkerPod(), "Evicted", pressure), "DisruptionTarget", "True",
                     "TerminationByKubelet", pressure),
       "evicted: " + pressure},
      {"critical pod preemption",
       WithReason(WorkerPod(), "Preempting", "Preempted in order to admit critical pod"),
       "preempted: Preempted in order to admit critical pod"},
      {"node lost (old node controller)",
       WithReason(WorkerPod(), "NodeLost",
                  "Node node-a which was running pod j-worker-0 is unresponsive"),
       "node lost: Node node-a which was running pod j-worker-0 is unresponsive"},
      {"graceful node shutdown",
       WithReason(WorkerPod(), "Terminated",
                  "Pod was terminated in response to imminent node shutdown."),
       "node shutdown: Pod was terminated in response to imminent node shutdown."},
      {"graceful node shutdown before 1.22", WithReason(WorkerPod(), "Shutdown", ""),
       "node shutdown"},
      {"not admitted: node shutting down",
       WithReason(WorkerPod(), "NodeShutdown", "Pod was rejected as the node is shutting down."),
       "node shutdown: Pod was rejected as the node is shutting down."},
      {"not admitted: out of a resource",
       WithReason(WorkerPod(), "OutOfnvidia.com/gpu",
                  "Node didn't have enough resource: nvidia.com/gpu, requested: 8, used: 0, "
                  "capacity: 0"),
       "not admitted (OutOfnvidia.com/gpu): Node didn't have enough resource: nvidia.com/gpu, "
       "requested: 8, used: 0, capacity: 0"},
      {"not admitted: unexpected", WithReason(WorkerPod(), "UnexpectedAdmissionError", "boom"),
       "not admitted (UnexpectedAdmissionError): boom"},
      {"scheduler preemption",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "PreemptionByScheduler",
                     "default-scheduler: preempting to accommodate a higher priority pod"),
       "preempted: default-scheduler: preempting to accommodate a higher priority pod"},
      {"eviction API (drain)",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "EvictionByEvictionAPI",
                     "Eviction API: evicting"),
       "evicted: Eviction API: evicting"},
      {"taint eviction",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "DeletionByTaintManager",
                     "Taint manager: deleting due to NoExecute taint"),
       "evicted: Taint manager: deleting due to NoExecute taint"},
      {"pod GC of a deleted node",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "DeletionByPodGC",
                     "PodGC: node no longer exists"),
       "node lost: PodGC: node no longer exists"},
      {"kubelet termination alone",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "TerminationByKubelet", ""),
       "terminated by the kubelet"},
      {"a reason of a later release",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "DeletionByDeviceTaintManager",
                     "device taint"),
       "disrupted (DeletionByDeviceTaintManager): device taint"},
      // The disruption controller resets a condition whose pod was not deleted after all.
      {"a reset condition",
       WithCondition(WorkerPod(), "DisruptionTarget", "False", "PreemptionByScheduler", "x"), ""},
      {"messages on one line",
       WithCondition(WorkerPod(), "DisruptionTarget", "True", "EvictionByEvictionAPI",
                     "line one\nline two"),
       "evicted: line one line two"},
  };
  for (const DisruptionCase& c : cases) {
    EXPECT_EQ(PodDisruption(c.pod), c.want) << c.name;
    EXPECT_EQ(Observe(c.pod).disruption, c.want) << c.name << " (trimmed, as cached)";
  }
}

TEST(PodDisruptionTest, LongMessagesAreCutOnACharacterBoundary) {
  std::string message;
  while (message.size() < 400) message += "é";  // two bytes each
  const std::string got = PodDisruption(WithReason(WorkerPod(), "Evicted", message));
  EXPECT_LE(got.size(), kMaxDisruptionLength);
  EXPECT_EQ(got.substr(0, 9), "evicted: ");
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(got.substr(got.size() - 3), "...");
  // No half character before the dots: the text before them is whole "é"s.
  EXPECT_EQ((got.size() - 3 - 9) % 2, 0u) << got;
}

TEST(DeletionRequestedTest, TimestampLessTheGracePeriod) {
  json pod = WorkerPod();
  EXPECT_EQ(DeletionRequested(pod), absl::InfinitePast());
  EXPECT_FALSE(Observe(pod).deleting);
  EXPECT_EQ(Observe(pod).deletion_requested, absl::InfinitePast());

  pod["metadata"]["deletionTimestamp"] = "2026-11-24T03:20:30Z";
  pod["metadata"]["deletionGracePeriodSeconds"] = 30;
  absl::Time want;
  std::string err;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, "2026-11-24T03:20:00Z", &want, &err));
  EXPECT_EQ(DeletionRequested(pod), want);
  const model::ObservedPod observed = Observe(pod);
  EXPECT_TRUE(observed.deleting);
  EXPECT_EQ(observed.deletion_requested, want);

  // Grace 0 (a force delete) or none given: the timestamp itself.
  pod["metadata"]["deletionGracePeriodSeconds"] = 0;
  EXPECT_EQ(DeletionRequested(pod), want + absl::Seconds(30));
  pod["metadata"].erase("deletionGracePeriodSeconds");
  EXPECT_EQ(DeletionRequested(pod), want + absl::Seconds(30));
  pod["metadata"]["deletionTimestamp"] = "not a time";
  EXPECT_EQ(DeletionRequested(pod), absl::InfinitePast());
}

// A running pod that is going gives notice: its deletion's grace, else its eviction; one that
// has ended gives none (it is a disruption or a failure, not a notice).
TEST(ToObservedPodTest, ARunningPodAboutToGoGivesNotice) {
  json pod = WorkerPod();
  EXPECT_EQ(Observe(pod).notice, "");
  EXPECT_EQ(Observe(pod).notice_deadline, absl::InfiniteFuture());
  json evicted = WithCondition(pod, "DisruptionTarget", "True", "EvictionByEvictionAPI",
                               "Eviction API: evicting");
  EXPECT_EQ(Observe(evicted).notice, "evicted: Eviction API: evicting");
  EXPECT_EQ(Observe(evicted).notice_deadline, absl::InfiniteFuture());
  evicted["metadata"]["deletionTimestamp"] = "2026-11-24T03:20:30Z";
  evicted["metadata"]["deletionGracePeriodSeconds"] = 30;
  const model::ObservedPod deleted = Observe(evicted);
  EXPECT_EQ(deleted.notice, "deleted: 30s of grace");
  absl::Time ends;
  std::string err;
  ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, "2026-11-24T03:20:30Z", &ends, &err));
  EXPECT_EQ(deleted.notice_deadline, ends);
  evicted["status"]["phase"] = "Failed";
  EXPECT_EQ(Observe(evicted).notice, "");
  EXPECT_EQ(Observe(evicted).notice_deadline, absl::InfiniteFuture());
}

TEST(ToObservedPodTest, AttemptFromTheLabel) {
  json pod = WorkerPod();
  EXPECT_EQ(Observe(pod).attempt, 0);
  for (const auto& [label, want] : std::vector<std::pair<std::string, int>>{
           {"3", 3}, {"0", 0}, {"-1", 0}, {"three", 0}, {"", 0}, {"99999999999999", 0}}) {
    pod["metadata"]["labels"]["coach.dev/attempt"] = label;
    EXPECT_EQ(Observe(pod).attempt, want) << label;
  }
  pod["metadata"]["labels"]["coach.dev/attempt"] = 7;  // not a string: no label
  EXPECT_EQ(Observe(pod).attempt, 0);
}

TEST(ToObservedPodTest, NodeLostIsNotThisFunctions) {
  // node_lost needs the Node watch (node_health.h); the pod alone never says it.
  EXPECT_FALSE(Observe(WithReason(WorkerPod(), "NodeLost", "")).node_lost);
}

TEST(TrimTest, KeepsTheConditionsAndMetadataTheFactsRead) {
  json pod = WorkerPod();
  pod["metadata"]["deletionTimestamp"] = "2026-11-24T03:20:30Z";
  pod["metadata"]["deletionGracePeriodSeconds"] = 30;
  pod["metadata"]["annotations"] = {{"big", std::string(1000, 'x')}};
  pod = WithCondition(pod, "PodScheduled", "True", "", "");
  pod = WithCondition(pod, "Ready", "False", "", "");
  pod = WithCondition(pod, "DisruptionTarget", "True", "EvictionByEvictionAPI", "m");
  const json t = Trim(pod, true);
  EXPECT_FALSE(t["metadata"].contains("annotations"));
  EXPECT_EQ(t["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ(t["spec"]["nodeName"], "node-a");
  ASSERT_EQ(t["status"]["conditions"].size(), 2u);
  EXPECT_EQ(t["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(t["status"]["conditions"][1]["type"], "DisruptionTarget");
  EXPECT_EQ(t["status"]["conditions"][1]["reason"], "EvictionByEvictionAPI");
}

}  // namespace
}  // namespace coach::backend::kube
