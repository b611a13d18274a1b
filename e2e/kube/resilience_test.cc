// Operator and API-server failures on a real control plane: kill -9 of coach-operator
// mid-job and a restart (no duplicate pods, the job completes); kill -9 and restart of the
// kube-apiserver while jobs run (the operator's watches recover, the job completes, a job
// created afterwards is reconciled).

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// 1 Master + 2 Workers whose pods exit 0 `run_seconds` after they started (kwok).
JobManifest Job(const std::string& name, int run_seconds) {
  return JobManifest::PyTorch(name)
      .Replicas({{"Master", 1}, {"Worker", 2}})
      .RestartPolicy("Never")
      .KwokExit(0, run_seconds);
}

class ResilienceTest : public KubeTest {
 protected:
  bool AllRunning(const std::string& job, size_t n) {
    std::vector<json> pods = JobPods(job);
    if (pods.size() != n) return false;
    for (const json& p : pods) {
      if (p["status"].value("phase", "") != "Running") return false;
    }
    return true;
  }
};

TEST_F(ResilienceTest, OperatorKill9MidJobNoDuplicatePods) {
  Apply(Job("k9", 10));
  ASSERT_TRUE(Eventually([&] { return AllRunning("k9", 3); }, absl::Seconds(60), kKubectlPoll));
  const std::map<std::string, std::string> before = PodUids("k9");
  op().Kill9();
  absl::SleepFor(absl::Seconds(2));
  const absl::Time begin = absl::Now();
  ASSERT_TRUE(op().Start().ok()) << op().Log();
  std::fprintf(stderr, "[kube-e2e] operator restarted after kill -9, ready in %s\n",
               absl::FormatDuration(absl::Now() - begin).c_str());
  // Let the restarted operator resync and reconcile; the pods must be the same ones.
  absl::SleepFor(absl::Seconds(2));
  EXPECT_EQ(PodUids("k9"), before);
  std::optional<json> j = WaitCondition("pytorchjobs", "k9", "Succeeded", absl::Seconds(90));
  ASSERT_TRUE(j);
  EXPECT_EQ(PodUids("k9"), before);
  EXPECT_EQ((*j)["status"]["replicaStatuses"]["Worker"].value("succeeded", 0), 2);
}

TEST_F(ResilienceTest, OperatorKill9WhileJobFinishes) {
  // The pods finish while no operator runs; the restarted one sees it from the listing.
  Apply(Job("k9done", 3));
  ASSERT_TRUE(Eventually([&] { return AllRunning("k9done", 3); }, absl::Seconds(60), kKubectlPoll));
  const std::map<std::string, std::string> before = PodUids("k9done");
  op().Kill9();
  ASSERT_TRUE(Eventually(
      [&] {
        for (const json& p : JobPods("k9done")) {
          if (p["status"].value("phase", "") != "Succeeded") return false;
        }
        return true;
      },
      absl::Seconds(30), kKubectlPoll));
  ASSERT_TRUE(op().Start().ok()) << op().Log();
  ASSERT_TRUE(WaitCondition("pytorchjobs", "k9done", "Succeeded", absl::Seconds(60)));
  EXPECT_EQ(PodUids("k9done"), before);
}

TEST_F(ResilienceTest, ApiServerRestartWhileJobsRun) {
  Apply(Job("apir", 12));
  ASSERT_TRUE(Eventually([&] { return AllRunning("apir", 3); }, absl::Seconds(60), kKubectlPoll));
  const std::map<std::string, std::string> before = PodUids("apir");
  const absl::Time begin = absl::Now();
  absl::Status restarted = cp().RestartApiServer(absl::Seconds(3));
  ASSERT_TRUE(restarted.ok()) << restarted;
  std::fprintf(stderr, "[kube-e2e] kube-apiserver killed, down 3 s, ready again after %s\n",
               absl::FormatDuration(absl::Now() - begin).c_str());
  EXPECT_TRUE(op().Alive()) << "the operator died with the apiserver:\n" << OperatorLogTail();
  std::optional<json> j = WaitCondition("pytorchjobs", "apir", "Succeeded", absl::Seconds(120));
  ASSERT_TRUE(j);
  EXPECT_EQ(PodUids("apir"), before);
  // The watches came back: a job created now is reconciled.
  Apply(Job("after", 1));
  EXPECT_TRUE(WaitCondition("pytorchjobs", "after", "Succeeded", absl::Seconds(90)));
  EXPECT_EQ(JobPods("after").size(), 3u);
}

}  // namespace
}  // namespace coach::e2e::kube
