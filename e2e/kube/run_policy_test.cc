// Restart policies and runPolicy on a real control plane: ExitCode (137 recreates the pod,
// 1 fails the job), OnFailure restarts counted by kwok towards backoffLimit,
// activeDeadlineSeconds on pods that never change, ttlSecondsAfterFinished,
// cleanPodPolicy All/Running, suspend and resume.

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// A PyTorchJob of one Master with restartPolicy `policy`; its pod runs until KwokExit() says.
JobManifest Master(const std::string& name, const std::string& policy) {
  return JobManifest::PyTorch(name).Replica("Master", 1).RestartPolicy(policy);
}

absl::Time ParseTime(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) return absl::InfinitePast();
  return t;
}

class RunPolicyTest : public KubeTest {
 protected:
  std::string PodUid(const std::string& pod) {
    std::optional<json> p = Get("pod", pod);
    return p ? (*p)["metadata"].value("uid", "") : "";
  }
};

TEST_F(RunPolicyTest, ExitCode137RecreatesThePod) {
  Apply(Master("ec137", "ExitCode").KwokExit(137, 2));
  std::string first;
  ASSERT_TRUE(Eventually([&] { return !(first = PodUid("ec137-master-0")).empty(); },
                         absl::Seconds(60), kKubectlPoll));
  const absl::Time begin = absl::Now();
  std::string second;
  ASSERT_TRUE(Eventually(
      [&] {
        second = PodUid("ec137-master-0");
        return !second.empty() && second != first;
      },
      absl::Seconds(60), kKubectlPoll))
      << OperatorLogTail();
  std::fprintf(stderr, "[kube-e2e] 137 exit: pod recreated %s after it was first seen\n",
               absl::FormatDuration(absl::Now() - begin).c_str());
  std::optional<json> j = Get("pytorchjobs", "ec137");
  ASSERT_TRUE(j);
  EXPECT_FALSE(HasCondition(*j, "Failed")) << (*j)["status"].dump();
  // Restarting is set while the pod is replaced (it may have flipped back to Running since).
  json restarting = Condition(*j, "Restarting");
  json running = Condition(*j, "Running");
  EXPECT_TRUE(!restarting.is_null() || !running.is_null()) << (*j)["status"].dump();
  if (!restarting.is_null()) {
    EXPECT_EQ(restarting.value("reason", ""), "PyTorchJobRestarting");
  }
}

TEST_F(RunPolicyTest, ExitCode1FailsTheJob) {
  Apply(Master("ec1", "ExitCode").KwokExit(1, 2));
  std::optional<json> j = WaitCondition("pytorchjobs", "ec1", "Failed");
  ASSERT_TRUE(j);
  EXPECT_EQ(Condition(*j, "Failed").value("reason", ""), "PyTorchJobFailed");
  EXPECT_EQ((*j)["status"]["replicaStatuses"]["Master"].value("failed", 0), 1)
      << (*j)["status"].dump();
  // Not recreated: the one pod is the failed one.
  std::vector<json> pods = JobPods("ec1");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["status"].value("phase", ""), "Failed");
}

TEST_F(RunPolicyTest, OnFailureRestartsCountTowardsBackoffLimit) {
  Apply(Master("bo", "OnFailure").KwokExit(1, 1).BackoffLimit(2));
  const absl::Time begin = absl::Now();
  std::optional<json> j = WaitCondition("pytorchjobs", "bo", "Failed", absl::Seconds(120));
  ASSERT_TRUE(j);
  std::fprintf(stderr, "[kube-e2e] backoffLimit 2 reached in %s\n",
               absl::FormatDuration(absl::Now() - begin).c_str());
  const json failed = Condition(*j, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "PyTorchJobFailed");
  EXPECT_TRUE(absl::StrContains(failed.value("message", ""), "backoff limit")) << failed.dump();
  // Restarted in place by "the kubelet" (kwok): the same pod, restartCount >= 2.
  std::vector<json> pods = JobPods("bo");
  if (!pods.empty()) {
    EXPECT_GE(pods[0]["status"]["containerStatuses"][0].value("restartCount", 0), 2);
  }
}

TEST_F(RunPolicyTest, ActiveDeadlineFiresWithoutPodEvents) {
  // Pods without exit annotations: Running forever, no event after they start.
  Apply(Master("dl", "OnFailure")
            .Replica("Worker", 1)
            .RestartPolicy("Never")
            .ActiveDeadlineSeconds(6));
  std::optional<json> j = WaitCondition("pytorchjobs", "dl", "Failed", absl::Seconds(60));
  ASSERT_TRUE(j);
  const json failed = Condition(*j, "Failed");
  EXPECT_TRUE(absl::StrContains(failed.value("message", ""), "deadline")) << failed.dump();
  const absl::Time start = ParseTime((*j)["status"].value("startTime", ""));
  const absl::Time fired = ParseTime(failed.value("lastTransitionTime", ""));
  const absl::Duration took = fired - start;
  std::fprintf(stderr, "[kube-e2e] activeDeadlineSeconds 6: Failed %s after startTime\n",
               absl::FormatDuration(took).c_str());
  EXPECT_GE(took, absl::Seconds(5));  // whole-second timestamps
  EXPECT_LE(took, absl::Seconds(15));
}

TEST_F(RunPolicyTest, TtlDeletesTheFinishedJob) {
  Apply(Master("ttl", "Never").KwokExit(0, 1).TtlSecondsAfterFinished(4));
  std::optional<json> j = WaitCondition("pytorchjobs", "ttl", "Succeeded");
  ASSERT_TRUE(j);
  const absl::Time completion = ParseTime((*j)["status"].value("completionTime", ""));
  ASSERT_TRUE(Eventually([&] { return !Get("pytorchjobs", "ttl").has_value(); }, absl::Seconds(60),
                         kKubectlPoll))
      << OperatorLogTail();
  const absl::Duration took = absl::Now() - completion;
  std::fprintf(stderr, "[kube-e2e] ttlSecondsAfterFinished 4: job gone %s after completionTime\n",
               absl::FormatDuration(took).c_str());
  EXPECT_GE(took, absl::Seconds(3));
  EXPECT_LE(took, absl::Seconds(20));
  // Its pods go with it (garbage collector, owner references).
  EXPECT_TRUE(Eventually([&] { return JobPods("ttl").empty(); }, absl::Seconds(60), kKubectlPoll));
}

TEST_F(RunPolicyTest, CleanPodPolicyAll) {
  Apply(Master("cpa", "Never")
            .KwokExit(0, 2)
            .Replica("Worker", 1)
            .RestartPolicy("Never")
            .CleanPodPolicy("All"));
  ASSERT_TRUE(
      Eventually([&] { return JobPods("cpa").size() == 2; }, absl::Seconds(60), kKubectlPoll));
  ASSERT_TRUE(WaitCondition("pytorchjobs", "cpa", "Succeeded"));
  EXPECT_TRUE(Eventually(
      [&] {
        return JobPods("cpa").empty() &&
               List("services", "training.kubeflow.org/job-name=cpa").empty();
      },
      absl::Seconds(30), kKubectlPoll))
      << JobPods("cpa").size() << " pods left";
}

TEST_F(RunPolicyTest, CleanPodPolicyRunning) {
  Apply(Master("cpr", "Never")
            .KwokExit(0, 2)
            .Replica("Worker", 1)
            .RestartPolicy("Never")
            .CleanPodPolicy("Running"));
  ASSERT_TRUE(
      Eventually([&] { return JobPods("cpr").size() == 2; }, absl::Seconds(60), kKubectlPoll));
  ASSERT_TRUE(WaitCondition("pytorchjobs", "cpr", "Succeeded"));
  // The Running worker goes (with its service); the Succeeded master stays.
  EXPECT_TRUE(Eventually([&] { return !Get("pod", "cpr-worker-0").has_value(); }, absl::Seconds(30),
                         kKubectlPoll));
  EXPECT_TRUE(Eventually([&] { return !Get("service", "cpr-worker-0").has_value(); },
                         absl::Seconds(30), kKubectlPoll));
  std::optional<json> master = Get("pod", "cpr-master-0");
  ASSERT_TRUE(master);
  EXPECT_EQ((*master)["status"].value("phase", ""), "Succeeded");
}

TEST_F(RunPolicyTest, SuspendAndResume) {
  Apply(Master("sus", "OnFailure").Replica("Worker", 1).RestartPolicy("Never"));
  ASSERT_TRUE(WaitCondition("pytorchjobs", "sus", "Running"));
  ASSERT_EQ(JobPods("sus").size(), 2u);
  CmdResult r = Kubectl({"patch", "pytorchjob", "sus", "-n", ns(), "--type=merge", "-p",
                         R"({"spec":{"runPolicy":{"suspend":true}}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const absl::Time begin = absl::Now();
  std::optional<json> j = WaitCondition("pytorchjobs", "sus", "Suspended");
  ASSERT_TRUE(j);
  EXPECT_EQ(Condition(*j, "Suspended").value("reason", ""), "PyTorchJobSuspended");
  EXPECT_EQ(Condition(*j, "Running").value("status", ""), "False");
  EXPECT_TRUE(Eventually(
      [&] {
        return JobPods("sus").empty() &&
               List("services", "training.kubeflow.org/job-name=sus").empty();
      },
      absl::Seconds(30), kKubectlPoll));
  std::fprintf(stderr, "[kube-e2e] suspend: pods gone %s after the patch\n",
               absl::FormatDuration(absl::Now() - begin).c_str());
  j = Get("pytorchjobs", "sus");
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["status"]["replicaStatuses"]["Master"].value("active", 0), 0);

  r = Kubectl({"patch", "pytorchjob", "sus", "-n", ns(), "--type=merge", "-p",
               R"({"spec":{"runPolicy":{"suspend":false}}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      Eventually([&] { return JobPods("sus").size() == 2; }, absl::Seconds(60), kKubectlPoll));
  j = WaitCondition("pytorchjobs", "sus", "Running");
  ASSERT_TRUE(j);
  EXPECT_FALSE(HasCondition(*j, "Suspended")) << (*j)["status"].dump();
}

}  // namespace
}  // namespace coach::e2e::kube
