// The same API on the kube backend: a job submitted with the `coach` CLI is a custom
// resource kubectl sees; a kubectl-applied job is listed by `coach list`; `coach logs` of a
// pod on a kwok node (no kubelet) says the log is not available from its node and exits
// non-zero.

#include <fstream>
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

std::string Manifest(const std::string& name, const std::string& annotations) {
  return absl::StrCat(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: )",
                      name, R"(
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations: {)",
                      annotations, R"(}
        spec:
          containers: [{name: pytorch, image: coach.local/none}]
)");
}

class CliTest : public KubeTest {
 protected:
  CmdResult Coach(std::vector<std::string> args) {
    std::vector<std::string> argv = {Runfile("sdk/cpp/cli/coach"), "--server", op().server()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, "", absl::Seconds(60));
  }
};

TEST_F(CliTest, SubmitIsSeenByKubectl) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/cli-submit.yaml");
  std::ofstream(path) << Manifest("viacli",
                                  "coach.test/exit-code: \"0\", coach.test/run-seconds: \"1\"");
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
  Apply(Manifest("viakubectl", ""));
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
  EXPECT_TRUE(
      WaitFor([&] { return !Get("pytorchjobs", "viakubectl").has_value(); }, absl::Seconds(30)));
}

TEST_F(CliTest, LogsOfKwokPodAreNotAvailable) {
  Apply(Manifest("nolog", ""));
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
  sdk::ConnectionOptions options;
  options.server = scoped.server();
  options.use_environment = false;
  auto client = sdk::TrainingClient::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  const std::string other = absl::StrCat(ns(), "-other");
  auto refused = (*client)->CreateJobFromManifest(Manifest("outside", ""), other);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::EndsWith(
      refused.status().message(),
      absl::StrCat("metadata.namespace: \"", other,
                   "\" is not watched by this operator (--namespaces ", watched, ")")))
      << refused.status();
  // The CLI says so too, and nothing was stored.
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/cli-outside.yaml");
  std::ofstream(path) << Manifest("outside", "");
  CmdResult r = RunCommand({Runfile("sdk/cpp/cli/coach"), "--server", scoped.server(), "submit",
                            "-f", path, "-n", other},
                           "", absl::Seconds(60));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(r.err, "is not watched by this operator")) << r.out << r.err;
  CmdResult get = Kubectl({"get", "pytorchjobs", "-A", "-o", "name"});
  EXPECT_FALSE(absl::StrContains(get.out, "outside")) << get.out;
  EXPECT_TRUE(scoped.Stop().ok()) << scoped.Log();
}

}  // namespace
}  // namespace coach::e2e::kube
