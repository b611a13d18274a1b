// Gang scheduling and managedBy on a real control plane. Each test starts its own
// coach-operator with the flags it needs (--gang-scheduler=volcano | scheduler-plugins, or
// none), after the test has installed a minimal PodGroup CRD of that scheduler (the backend
// probes the CRD when it starts). No Volcano or scheduler-plugins scheduler runs: the gang
// pods stay Pending (no scheduler binds them to a kwok node), so only the objects are checked.
//
// - Volcano: PodGroup <job> (scheduling.volcano.sh/v1beta1) with minMember = minAvailable,
//   queue, priorityClassName and the job as its controller owner; every pod has
//   schedulerName volcano and the annotations scheduling.k8s.io/group-name=<job>,
//   volcano.sh/task-spec=<lowercase replica type>; deleting the job garbage-collects the
//   PodGroup.
// - scheduler-plugins: PodGroup <job> (scheduling.x-k8s.io/v1alpha1) with minMember (total
//   replicas when no minAvailable) and scheduleTimeoutSeconds; pods have schedulerName
//   scheduler-plugins-scheduler and the label scheduling.x-k8s.io/pod-group=<job>.
// - managedBy kueue.x-k8s.io/multikueue: no pods, services or status from coach; the same
//   job without managedBy gets its pods.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// This binary starts one operator per test (each with its own --gang-scheduler).
const bool kNoSuiteOperator = (KubeTest::StartSuiteOperatorForTests() = false, true);

// A minimal PodGroup CRD: spec/status are kept as given.
std::string PodGroupCrd(const std::string& group, const std::string& version) {
  return absl::StrCat(R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: podgroups.)",
                      group, R"(
spec:
  group: )",
                      group, R"(
  scope: Namespaced
  names: {plural: podgroups, singular: podgroup, kind: PodGroup, listKind: PodGroupList}
  versions:
  - name: )",
                      version, R"(
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
)");
}

// Master 1 + Worker 2 that stay Running once they run (they never run here when gang
// scheduled: no scheduler binds them).
JobManifest Job(const std::string& name) {
  return JobManifest::PyTorch(name).Replicas({{"Master", 1}, {"Worker", 2}}).RestartPolicy("Never");
}

class SchedulingTest : public KubeTest {
 protected:
  void TearDown() override {
    KubeTest::TearDown();  // prints op_'s log tail on failure
    if (op_ != nullptr) {
      (void)op_->Stop();
      op_.reset();
    }
  }
  // Installs the CRD (when given) and starts this test's operator with `args`.
  void StartOperator(const std::vector<std::string>& args, const std::string& crd = "") {
    ASSERT_TRUE(kNoSuiteOperator);
    if (!crd.empty()) {
      CmdResult r = Kubectl({"apply", "-f", "-"}, crd);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      r = Kubectl({"wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    op_ = std::make_unique<OperatorProcess>("operator-" + ns(), TestTmpDir(), cp().kubeconfig(),
                                            args);
    absl::Status s = op_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  std::vector<json> WaitPods(const std::string& job, size_t n) {
    std::vector<json> pods;
    EXPECT_TRUE(Eventually(
        [&] {
          pods = JobPods(job);
          return pods.size() == n;
        },
        absl::Seconds(60), kKubectlPoll))
        << "pods: " << pods.size() << " want " << n << "\n"
        << OperatorLogTail();
    return pods;
  }
  std::optional<json> WaitPodGroup(const std::string& resource, const std::string& name) {
    std::optional<json> pg;
    EXPECT_TRUE(Eventually(
        [&] {
          pg = Get(resource, name);
          return pg.has_value();
        },
        absl::Seconds(60), kKubectlPoll))
        << "no " << resource << " " << name << "\n"
        << OperatorLogTail();
    return pg;
  }
  void ExpectOwnedByJob(const json& obj, const std::string& job) {
    std::optional<json> j = Get("pytorchjobs", job);
    ASSERT_TRUE(j.has_value());
    ASSERT_TRUE(obj["metadata"].contains("ownerReferences")) << obj.dump();
    const json& owner = obj["metadata"]["ownerReferences"][0];
    EXPECT_EQ(owner.value("kind", ""), "PyTorchJob");
    EXPECT_EQ(owner.value("name", ""), job);
    EXPECT_EQ(owner.value("uid", ""), (*j)["metadata"].value("uid", ""));
    EXPECT_TRUE(owner.value("controller", false));
  }
};

TEST_F(SchedulingTest, VolcanoPodGroupAndPods) {
  StartOperator({"--gang-scheduler=volcano"}, PodGroupCrd("scheduling.volcano.sh", "v1beta1"));
  if (HasFatalFailure()) return;
  const std::string pg_resource = "podgroups.v1beta1.scheduling.volcano.sh";
  Apply(Job("vc").MinAvailable(2).Queue("q1").PriorityClass("high"));
  std::optional<json> pg = WaitPodGroup(pg_resource, "vc");
  ASSERT_TRUE(pg.has_value());
  EXPECT_EQ((*pg)["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ((*pg)["spec"].value("minMember", -1), 2) << pg->dump();
  EXPECT_EQ((*pg)["spec"].value("queue", ""), "q1") << pg->dump();
  EXPECT_EQ((*pg)["spec"].value("priorityClassName", ""), "high") << pg->dump();
  ExpectOwnedByJob(*pg, "vc");

  std::vector<json> pods = WaitPods("vc", 3);
  for (const json& p : pods) {
    const std::string name = p["metadata"]["name"];
    const std::string type =
        p["metadata"]["labels"].value("training.kubeflow.org/replica-type", "");
    EXPECT_EQ(p["spec"].value("schedulerName", ""), "volcano") << name;
    const json ann = p["metadata"].value("annotations", json::object());
    EXPECT_EQ(ann.value("scheduling.k8s.io/group-name", ""), "vc") << name;
    EXPECT_EQ(ann.value("volcano.sh/task-spec", ""), type) << name;
    EXPECT_TRUE(type == "master" || type == "worker") << name << " " << type;
    // No Volcano scheduler: nothing binds the pod.
    EXPECT_EQ(p["spec"].value("nodeName", ""), "") << name;
  }

  // Deleting the job: the garbage collector removes the PodGroup (owner reference).
  const absl::Time deleted = absl::Now();
  CmdResult r = Kubectl({"delete", "pytorchjob", "vc", "-n", ns(), "--wait=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The garbage collector monitors a newly installed CRD's resource only after its next
  // discovery resync (30 s in kube-controller-manager), hence the long wait.
  EXPECT_TRUE(Eventually([&] { return !Get(pg_resource, "vc").has_value(); }, absl::Seconds(90),
                         kKubectlPoll))
      << "PodGroup not garbage-collected";
  std::fprintf(stderr, "[kube-e2e] vc: PodGroup gone %s after the job's delete\n",
               absl::FormatDuration(absl::Now() - deleted).c_str());
  EXPECT_TRUE(Eventually([&] { return JobPods("vc").empty(); }, absl::Seconds(60), kKubectlPoll));
}

TEST_F(SchedulingTest, SchedulerPluginsPodGroupAndPods) {
  StartOperator({"--gang-scheduler=scheduler-plugins"},
                PodGroupCrd("scheduling.x-k8s.io", "v1alpha1"));
  if (HasFatalFailure()) return;
  const std::string pg_resource = "podgroups.v1alpha1.scheduling.x-k8s.io";
  Apply(Job("sp").ScheduleTimeoutSeconds(30));
  std::optional<json> pg = WaitPodGroup(pg_resource, "sp");
  ASSERT_TRUE(pg.has_value());
  EXPECT_EQ((*pg)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((*pg)["spec"].value("minMember", -1), 3) << pg->dump();  // total replicas
  EXPECT_EQ((*pg)["spec"].value("scheduleTimeoutSeconds", -1), 30) << pg->dump();
  ExpectOwnedByJob(*pg, "sp");

  std::vector<json> pods = WaitPods("sp", 3);
  for (const json& p : pods) {
    const std::string name = p["metadata"]["name"];
    EXPECT_EQ(p["spec"].value("schedulerName", ""), "scheduler-plugins-scheduler") << name;
    EXPECT_EQ(p["metadata"]["labels"].value("scheduling.x-k8s.io/pod-group", ""), "sp") << name;
    const json ann = p["metadata"].value("annotations", json::object());
    EXPECT_FALSE(ann.contains("scheduling.k8s.io/group-name")) << name;
    EXPECT_EQ(p["spec"].value("nodeName", ""), "") << name;
  }

  const absl::Time deleted = absl::Now();
  CmdResult r = Kubectl({"delete", "pytorchjob", "sp", "-n", ns(), "--wait=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The garbage collector monitors a newly installed CRD's resource only after its next
  // discovery resync (30 s in kube-controller-manager), hence the long wait.
  EXPECT_TRUE(Eventually([&] { return !Get(pg_resource, "sp").has_value(); }, absl::Seconds(90),
                         kKubectlPoll))
      << "PodGroup not garbage-collected";
  std::fprintf(stderr, "[kube-e2e] sp: PodGroup gone %s after the job's delete\n",
               absl::FormatDuration(absl::Now() - deleted).c_str());
}

TEST_F(SchedulingTest, ManagedByMultiKueueIsLeftAlone) {
  StartOperator({});
  if (HasFatalFailure()) return;
  Apply(Job("mk").ManagedBy("kueue.x-k8s.io/multikueue"));
  Apply(Job("own"));
  // The control job gets its pods: the operator is reconciling this namespace.
  WaitPods("own", 3);
  absl::SleepFor(absl::Seconds(5));
  EXPECT_TRUE(JobPods("mk").empty());
  EXPECT_TRUE(List("services", "training.kubeflow.org/job-name=mk").empty());
  std::optional<json> mk = Get("pytorchjobs", "mk");
  ASSERT_TRUE(mk.has_value());
  const json status = mk->value("status", json::object());
  EXPECT_TRUE(status.empty() ||
              (!status.contains("conditions") && !status.contains("replicaStatuses") &&
               !status.contains("startTime")))
      << status.dump();
  // The control job's status is written.
  std::optional<json> own = Get("pytorchjobs", "own");
  ASSERT_TRUE(own.has_value());
  EXPECT_TRUE(HasCondition(*own, "Created")) << own->dump();
  EXPECT_EQ((*mk)["spec"]["runPolicy"].value("managedBy", ""), "kueue.x-k8s.io/multikueue");
}

}  // namespace
}  // namespace coach::e2e::kube
