// The same API on the kube backend: a job submitted with the `coach` CLI is a custom
// resource kubectl sees; a kubectl-applied job is listed by `coach list`; `coach logs` of a
// pod on a kwok node (no kubelet) says the log is not available from its node and exits
// non-zero.

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/cpp/training_client.h"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// One Master, restartPolicy OnFailure; without KwokExit() its pod keeps running.
JobManifest Job(const std::string& name) {
  return JobManifest::PyTorch(name).Replica("Master", 1).RestartPolicy("OnFailure");
}

using CliTest = KubeTest;

TEST_F(CliTest, SubmitIsSeenByKubectl) {
  const std::string path = TestTmpDir() + "/cli-submit.yaml";
  WriteFileOrDie(path, Job("viacli").KwokExit(0, 1).Yaml());
  CmdResult r = Coach({"submit", "-f", path, "-n", ns()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::optional<json> j = Get("pytorchjobs", "viacli");
  ASSERT_TRUE(j) << "kubectl does not see the submitted job";
  EXPECT_EQ((*j)["spec"]["pytorchReplicaSpecs"]["Master"].value("replicas", 0), 1);
  ASSERT_TRUE(WaitCondition("pytorchjobs", "viacli", "Succeeded"));
  EXPECT_EQ(JobPods("viacli").size(), 1u);
  CmdResult wait = Coach({"wait", "viacli", "-n", ns(), "--for", "Succeeded"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out << wait.err;
}

TEST_F(CliTest, KubectlAppliedJobListedByCoach) {
  Apply(Job("viakubectl"));
  ASSERT_TRUE(WaitCondition("pytorchjobs", "viakubectl", "Running"));
  CmdResult r = Coach({"list", "-n", ns()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "viakubectl")) << r.out;
  CmdResult js = Coach({"list", "-n", ns(), "-o", "json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_TRUE(absl::StrContains(js.out, "viakubectl")) << js.out;
  // Deleted through the CLI, gone for kubectl.
  CmdResult del = Coach({"delete", "viakubectl", "-n", ns()});
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_TRUE(Eventually([&] { return !Get("pytorchjobs", "viakubectl").has_value(); },
                         absl::Seconds(30), kKubectlPoll));
}

TEST_F(CliTest, LogsOfKwokPodAreNotAvailable) {
  Apply(Job("nolog"));
  ASSERT_TRUE(WaitCondition("pytorchjobs", "nolog", "Running"));
  CmdResult r = Coach({"logs", "nolog", "-n", ns(), "--replica", "master-0"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(absl::StrContains(r.out + r.err, "not available from its node")) << r.out << r.err;
}

// With --namespaces, a job submitted into another namespace would be stored where no watch of
// this operator sees it, never to run: CreateJob refuses it, and the client gets
// FAILED_PRECONDITION naming the field and the watched namespaces.
TEST_F(CliTest, CreateOutsideTheWatchedNamespacesIsRefused) {
  // Namespaces of its own: the suite's operator reconciles ns().
  const std::string watched = absl::StrCat(ns(), "-a,", ns(), "-b");
  OperatorProcess scoped("scoped", TestTmpDir(), cp().kubeconfig(), {"--namespaces", watched});
  ASSERT_TRUE(scoped.Start().ok()) << scoped.Log();
  std::unique_ptr<sdk::TrainingClient> client = NewTrainingClient(scoped.server(), "");
  const std::string other = absl::StrCat(ns(), "-other");
  auto refused = client->CreateJobFromManifest(Job("outside").Yaml(), other);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::EndsWith(
      refused.status().message(),
      absl::StrCat("metadata.namespace: \"", other,
                   "\" is not watched by this operator (--namespaces ", watched, ")")))
      << refused.status();
  // The CLI says so too, and nothing was stored.
  const std::string path = TestTmpDir() + "/cli-outside.yaml";
  WriteFileOrDie(path, Job("outside").Yaml());
  CmdResult r = RunCoach(scoped.server(), {"submit", "-f", path, "-n", other});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(r.err, "is not watched by this operator")) << r.out << r.err;
  CmdResult get = Kubectl({"get", "pytorchjobs", "-A", "-o", "name"});
  EXPECT_FALSE(absl::StrContains(get.out, "outside")) << get.out;
  EXPECT_TRUE(scoped.Stop().ok()) << scoped.Log();
}

}  // namespace
}  // namespace coach::e2e::kube
