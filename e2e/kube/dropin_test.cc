// What users of the upstream operator meet first, on a real control plane:
//  - invalid jobs are refused at `kubectl apply` by the CRDs' schema and rules, naming the
//    field as `coach validate` does, and nothing is stored;
//  - a stored job that breaks a rule the CRDs cannot check, or whose objects the API server
//    refuses, fails with a Warning event instead of stalling;
//  - Worker-only elastic PyTorchJobs get PET_NPROC_PER_NODE;
//  - a job applied without spec.runPolicy reads back with one;
//  - PyTorch Workers get the init container that waits for the Master's name.

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

constexpr char kInitImage[] = "coach.local/coach-operator:e2e";

// A PyTorchJob of `replicas` whose pods exit 0 at once on kwok; replica setters after it change
// every one of these types.
JobManifest PyTorchJob(const std::string& name,
                       const std::vector<std::pair<std::string, int>>& replicas) {
  return JobManifest::PyTorch(name).Replicas(replicas).RestartPolicy("Never").KwokExit(0);
}

class DropInTest : public KubeTest {
 protected:
  static void SetUpTestSuite() {
    OperatorArgs().push_back(absl::StrCat("--pytorch-init-container-image=", kInitImage));
    KubeTest::SetUpTestSuite();
  }

  // The offline `coach` command (no server) reading `input` on stdin.
  static CmdResult OfflineCoach(const std::vector<std::string>& args, const std::string& input) {
    return RunCoach("", args, input);
  }

  // The Warning events of `job`, as "reason: message".
  std::vector<std::string> Warnings(const std::string& job) {
    std::vector<std::string> out;
    for (const json& e : List("events")) {
      if (e["involvedObject"].value("name", "") != job || e.value("type", "") != "Warning") {
        continue;
      }
      out.push_back(absl::StrCat(e.value("reason", ""), ": ", e.value("message", "")));
    }
    return out;
  }
};

TEST_F(DropInTest, InvalidJobsAreRefusedAtApplyNamingTheField) {
  struct Case {
    const char* scenario;
    std::string yaml;
    std::vector<std::string> says;  // in kubectl's error
  };
  const std::vector<Case> cases = {
      {"name not a DNS-1035 label",
       PyTorchJob("Bad_Name", {{"Master", 1}}).Yaml(),
       {"metadata.name", "^[a-z]([-a-z0-9]*[a-z0-9])?$"}},
      {"PyTorchJob with a Chief",
       PyTorchJob("chief", {{"Chief", 1}, {"Worker", 1}}).Yaml(),
       {"spec.pytorchReplicaSpecs", "unknown replica type \"Chief\" for PyTorchJob"}},
      {"JAXJob with a Master",
       JobManifest(api::v1::JAX_JOB, "jax-master")
           .Replicas({{"Master", 1}, {"Worker", 1}})
           .Image("i")
           .Yaml(),
       {"spec.jaxReplicaSpecs", "unknown replica type \"Master\" for JAXJob"}},
      {"container without an image",
       PyTorchJob("no-image", {{"Master", 1}}).Image("").Yaml(),
       {"spec.pytorchReplicaSpecs[Master].template.spec.containers",
        "every container needs an image"}},
      {"no container with the default name",
       PyTorchJob("no-default", {{"Master", 1}}).ContainerName("main").Image("i").Yaml(),
       {"spec.pytorchReplicaSpecs[Master].template.spec.containers",
        "must have a container named \"pytorch\""}},
      {"only Workers, none of them",
       PyTorchJob("zero-workers", {{"Worker", 0}}).Yaml(),
       {"spec.pytorchReplicaSpecs", "Worker replicas must be >= 1 when there is no Master"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    const CmdResult applied = Kubectl({"apply", "-n", ns(), "-f", "-"}, c.yaml);
    EXPECT_NE(applied.exit_code, 0) << applied.out;
    for (const std::string& part : c.says) {
      EXPECT_TRUE(absl::StrContains(applied.err, part)) << "want \"" << part << "\" in:\n"
                                                        << applied.err;
    }
  }
  // Nothing of it was stored.
  EXPECT_TRUE(List("pytorchjobs").empty());
  EXPECT_TRUE(List("jaxjobs").empty());
}

// `coach validate` refuses the same manifests, naming the same fields in its own syntax.
TEST_F(DropInTest, CoachValidateNamesTheSameFields) {
  struct Case {
    std::string yaml;
    std::string field;
  };
  const std::vector<Case> cases = {
      {PyTorchJob("Bad_Name", {{"Master", 1}}).Yaml(), "metadata.name"},
      {PyTorchJob("chief", {{"Chief", 1}}).Yaml(), "spec.pytorchReplicaSpecs.Chief"},
      {PyTorchJob("no-image", {{"Master", 1}}).Image("").Yaml(),
       "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image"},
      {PyTorchJob("zero-workers", {{"Worker", 0}}).Yaml(),
       "spec.pytorchReplicaSpecs.Worker.replicas"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    const CmdResult r = OfflineCoach({"validate", "-f", "-"}, c.yaml);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(absl::StrContains(r.err, c.field)) << r.err;
  }
}

// kubectl's rule for namespaces, in the real `coach` binary: -n only for jobs that name none.
TEST_F(DropInTest, CoachRenderTakesTheManifestsNamespace) {
  const std::string yaml = PyTorchJob("own-ns", {{"Master", 1}}).Namespace("kubeflow").Yaml();
  const CmdResult plain = OfflineCoach({"render", "-f", "-", "-o", "json"}, yaml);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const json list = json::parse(plain.out);
  ASSERT_FALSE(list["items"].empty());
  for (const json& item : list["items"]) EXPECT_EQ(item["metadata"]["namespace"], "kubeflow");
  EXPECT_EQ(OfflineCoach({"validate", "-f", "-", "-n", "kubeflow"}, yaml).exit_code, 0);
  const CmdResult clash = OfflineCoach({"validate", "-f", "-", "-n", "team-a"}, yaml);
  EXPECT_NE(clash.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(clash.err, "metadata.namespace")) << clash.err;
}

// The CRDs cannot check coach's own annotations: the controller holds the stored job to the
// same rules as coach's API and fails it, never a silent stall.
TEST_F(DropInTest, StoredJobBreakingARuleFailsWithAWarning) {
  Apply(PyTorchJob("bad-annotation", {{"Master", 1}}).Annotation("coach.dev/launcher", "maybe"));
  std::optional<json> job = WaitCondition("pytorchjobs", "bad-annotation", "Failed");
  ASSERT_TRUE(job.has_value()) << OperatorLogTail();
  const json failed = Condition(*job, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "PyTorchJobFailedValidation");
  EXPECT_TRUE(
      absl::StrContains(failed.value("message", ""), "metadata.annotations[coach.dev/launcher]"))
      << failed.dump();
  EXPECT_TRUE(JobPods("bad-annotation").empty());
  EXPECT_TRUE(Eventually(
      [&] {
        for (const std::string& w : Warnings("bad-annotation")) {
          if (absl::StartsWith(w, "PyTorchJobFailedValidation: metadata.annotations")) return true;
        }
        return false;
      },
      absl::Seconds(30), kKubectlPoll));
}

// A pod the API server refuses (a port name longer than 15 characters): the job fails with
// the server's reason instead of retrying forever.
TEST_F(DropInTest, ObjectsTheApiServerRefusesFailTheJob) {
  Apply(PyTorchJob("bad-port", {{"Master", 1}}).Port("this-port-name-is-too-long", 23456));
  std::optional<json> job = WaitCondition("pytorchjobs", "bad-port", "Failed");
  ASSERT_TRUE(job.has_value()) << OperatorLogTail();
  const json failed = Condition(*job, "Failed");
  EXPECT_EQ(failed.value("reason", ""), "PyTorchJobFailedValidation");
  EXPECT_TRUE(absl::StrContains(failed.value("message", ""), "Error creating")) << failed.dump();
  EXPECT_TRUE(Eventually(
      [&] {
        for (const std::string& w : Warnings("bad-port")) {
          if (absl::StartsWith(w, "FailedCreate")) return true;
        }
        return false;
      },
      absl::Seconds(30), kKubectlPoll))
      << OperatorLogTail();
}

// Upstream's elastic examples (echo, imagenet) have Workers only.
TEST_F(DropInTest, WorkerOnlyElasticJobGetsNprocPerNode) {
  Apply(PyTorchJob("elastic", {{"Worker", 2}}).ElasticPolicy("c10d", 1, 2));
  std::vector<json> pods;
  ASSERT_TRUE(Eventually(
      [&] {
        pods = JobPods("elastic");
        return pods.size() == 2;
      },
      absl::Seconds(60), kKubectlPoll));
  for (const json& pod : pods) {
    EXPECT_EQ(PodEnv(pod, "PET_NPROC_PER_NODE"), "auto") << pod["metadata"]["name"];
    EXPECT_EQ(PodEnv(pod, "PET_NNODES"), "1:2");
  }
}

// The seed's manifest has no runPolicy; the upstream Python SDK's models need one.
TEST_F(DropInTest, JobWithoutRunPolicyReadsBackWithOne) {
  Apply(PyTorchJob("no-run-policy", {{"Master", 1}}));
  std::optional<json> job = Get("pytorchjobs", "no-run-policy");
  ASSERT_TRUE(job.has_value());
  ASSERT_TRUE((*job)["spec"].contains("runPolicy")) << job->dump();
  EXPECT_TRUE((*job)["spec"]["runPolicy"].is_object());
}

TEST_F(DropInTest, PyTorchWorkersWaitForTheMaster) {
  Apply(PyTorchJob("waits", {{"Master", 1}, {"Worker", 2}}));
  std::vector<json> pods;
  ASSERT_TRUE(Eventually(
      [&] {
        pods = JobPods("waits");
        return pods.size() == 3;
      },
      absl::Seconds(60), kKubectlPoll));
  for (const json& pod : pods) {
    const std::string name = pod["metadata"]["name"];
    const json inits = pod["spec"].value("initContainers", json::array());
    if (name == "waits-master-0") {
      EXPECT_TRUE(inits.empty()) << inits.dump();
      continue;
    }
    ASSERT_EQ(inits.size(), 1u) << name;
    EXPECT_EQ(inits[0]["name"], "init-pytorch");
    EXPECT_EQ(inits[0]["image"], kInitImage);
    EXPECT_EQ(inits[0]["command"],
              json::parse(R"(["/usr/local/bin/coach-launch","--wait-for-host","waits-master-0",
                              "--peer-timeout","200s"])"));
    EXPECT_EQ(inits[0]["resources"]["limits"]["memory"], "20Mi");
  }
  // The opt-out.
  Apply(PyTorchJob("no-wait", {{"Master", 1}, {"Worker", 1}})
            .Annotation("coach.dev/wait-for-master", "false"));
  ASSERT_TRUE(
      Eventually([&] { return JobPods("no-wait").size() == 2; }, absl::Seconds(60), kKubectlPoll));
  for (const json& pod : JobPods("no-wait")) {
    EXPECT_FALSE(pod["spec"].contains("initContainers")) << pod["metadata"]["name"];
  }
}

}  // namespace
}  // namespace coach::e2e::kube
