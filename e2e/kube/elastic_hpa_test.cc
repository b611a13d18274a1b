// The HorizontalPodAutoscaler of an elastic PyTorchJob on a real control plane, as upstream's
// training-operator makes it (pkg/controller.v1/pytorch/hpa.go):
//
// - a kubectl-applied PyTorchJob with elasticPolicy.metrics gets an autoscaling/v2 HPA of its
//   name, controlled by the job (ownerReference kind, name, uid, controller,
//   blockOwnerDeletion), scaleTargetRef {kubeflow.org/v1, PyTorchJob, <job>}, minReplicas and
//   maxReplicas of the elasticPolicy and its metrics;
// - the job's scale subresource (GET .../pytorchjobs/<job>/scale, what the HPA controller and
//   `kubectl scale` use) reports the Workers' replicas and their label selector, which selects
//   the Worker pods; `kubectl scale` through it adds a Worker pod;
// - changed metrics and bounds patch the HPA in place; suspend deletes it and resume makes it
//   again; removed metrics delete it;
// - kube-controller-manager's HPA controller scales the job: Worker replicas below minReplicas
//   go up to it through the scale subresource, and the operator creates the pod;
// - deleting the job garbage-collects its HPA.

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

const json kCpu = json::parse(R"([{"type":"Resource","resource":{"name":"cpu",
    "target":{"type":"Utilization","averageUtilization":80}}}])");
const json kQps = json::parse(R"([{"type":"Pods","pods":{"metric":{"name":"qps"},
    "target":{"type":"AverageValue","averageValue":"10"}}}])");

// Elastic Workers only (as upstream's elastic examples), running until deleted.
std::string ElasticJob(const std::string& name, int workers, int min, int max,
                       const json& metrics) {
  json job = JobManifest::PyTorch(name)
                 .Replica("Worker", workers)
                 .RestartPolicy("OnFailure")
                 .ElasticPolicy("c10d", min, max)
                 .Json();
  job["spec"]["elasticPolicy"]["metrics"] = metrics;
  return job.dump();
}

class ElasticHpaTest : public KubeTest {
 protected:
  // The job's HPA once `pred` holds of it (nullopt: it never did, with a test failure).
  std::optional<json> WaitHpa(const std::string& job, const std::function<bool(const json&)>& pred,
                              const std::string& what) {
    std::optional<json> hpa;
    const bool held = Eventually(
        [&] {
          hpa = Get("horizontalpodautoscalers.autoscaling", job);
          return hpa.has_value() && pred(*hpa);
        },
        absl::Seconds(60), kKubectlPoll);
    EXPECT_TRUE(held) << what << "; HPA: " << (hpa ? hpa->dump() : "none") << "\n"
                      << OperatorLogTail();
    return held ? hpa : std::nullopt;
  }
  bool HpaGone(const std::string& job, absl::Duration timeout = absl::Seconds(60)) {
    return Eventually([&] { return !Get("horizontalpodautoscalers.autoscaling", job); }, timeout,
                      kKubectlPoll);
  }
  // GET .../pytorchjobs/<job>/scale: an autoscaling/v1 Scale.
  json Scale(const std::string& job) {
    CmdResult r = Kubectl(
        {"get", "--raw",
         absl::StrCat("/apis/kubeflow.org/v1/namespaces/", ns(), "/pytorchjobs/", job, "/scale")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json scale = json::parse(r.out, nullptr, false);
    return scale.is_discarded() ? json::object() : scale;
  }
  void Patch(const std::string& job, const std::string& type, const std::string& patch) {
    CmdResult r = Kubectl({"patch", "pytorchjob", job, "-n", ns(), "--type=" + type, "-p", patch});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  bool WorkerPods(const std::string& job, size_t n) {
    return Eventually([&] { return JobPods(job).size() == n; }, absl::Seconds(60), kKubectlPoll);
  }
};

TEST_F(ElasticHpaTest, HpaFollowsTheJob) {
  Apply(ElasticJob("el", 1, 1, 3, kCpu));
  std::optional<json> job = Get("pytorchjobs", "el");
  ASSERT_TRUE(job.has_value());
  std::optional<json> hpa = WaitHpa(
      "el", [](const json&) { return true; }, "no HPA");
  ASSERT_TRUE(hpa.has_value());
  EXPECT_EQ((*hpa)["apiVersion"], "autoscaling/v2");
  const json& owner = (*hpa)["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner.value("apiVersion", ""), "kubeflow.org/v1");
  EXPECT_EQ(owner.value("kind", ""), "PyTorchJob");
  EXPECT_EQ(owner.value("name", ""), "el");
  EXPECT_EQ(owner.value("uid", ""), (*job)["metadata"].value("uid", ""));
  EXPECT_TRUE(owner.value("controller", false));
  EXPECT_TRUE(owner.value("blockOwnerDeletion", false));
  EXPECT_EQ((*hpa)["metadata"]["labels"].value("coach.dev/job-name", ""), "el");
  const json& spec = (*hpa)["spec"];
  EXPECT_EQ(spec["scaleTargetRef"],
            json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"el"})"));
  EXPECT_EQ(spec.value("minReplicas", 0), 1);
  EXPECT_EQ(spec.value("maxReplicas", 0), 3);
  EXPECT_EQ(spec["metrics"], kCpu);

  // The scale subresource: the Workers' replicas and the selector of their pods.
  const std::string selector =
      "training.kubeflow.org/job-name=el,training.kubeflow.org/operator-name="
      "pytorchjob-controller,training.kubeflow.org/replica-type=worker";
  json scale;
  ASSERT_TRUE(Eventually(
      [&] {
        scale = Scale("el");
        return scale["status"].value("selector", "") == selector &&
               scale["status"].value("replicas", 0) == 1;
      },
      absl::Seconds(60), kKubectlPoll))
      << scale.dump() << "\n"
      << OperatorLogTail();
  EXPECT_EQ(scale["spec"].value("replicas", 0), 1);
  ASSERT_EQ(List("pods", selector).size(), 1u);
  EXPECT_EQ(List("pods", selector)[0]["metadata"].value("name", ""), "el-worker-0");

  // What the HPA controller does, by hand: the job gets a second Worker.
  CmdResult r = Kubectl({"scale", "pytorchjob/el", "-n", ns(), "--replicas=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WorkerPods("el", 2)) << OperatorLogTail();
  EXPECT_EQ(Scale("el")["spec"].value("replicas", 0), 2);

  // New bounds and metrics: the same HPA, patched.
  const std::string uid = (*hpa)["metadata"].value("uid", "");
  Patch("el", "merge",
        json{{"spec", {{"elasticPolicy", {{"maxReplicas", 4}, {"metrics", kQps}}}}}}.dump());
  hpa = WaitHpa(
      "el", [](const json& h) { return h["spec"].value("maxReplicas", 0) == 4; }, "not patched");
  ASSERT_TRUE(hpa.has_value());
  EXPECT_EQ((*hpa)["spec"]["metrics"], kQps);
  EXPECT_EQ((*hpa)["metadata"].value("uid", ""), uid);

  // Suspended, a job has no HPA (upstream); resumed, it has one again.
  Patch("el", "merge", R"({"spec":{"runPolicy":{"suspend":true}}})");
  EXPECT_TRUE(HpaGone("el")) << OperatorLogTail();
  Patch("el", "merge", R"({"spec":{"runPolicy":{"suspend":false}}})");
  EXPECT_TRUE(WaitHpa(
      "el", [](const json&) { return true; }, "not back after resume"));

  Patch("el", "json", R"([{"op":"remove","path":"/spec/elasticPolicy/metrics"}])");
  EXPECT_TRUE(HpaGone("el")) << OperatorLogTail();
}

TEST_F(ElasticHpaTest, TheAutoscalerScalesTheJob) {
  // One Worker, minReplicas 2: the HPA controller raises the Workers to 2 without metrics (30 s
  // after the HPA appeared, in every run here; the wait allows three times that).
  Apply(ElasticJob("auto", 1, 2, 3, kCpu));
  ASSERT_TRUE(WorkerPods("auto", 1)) << OperatorLogTail();
  ASSERT_TRUE(WaitHpa(
      "auto", [](const json&) { return true; }, "no HPA"));
  const absl::Time begin = absl::Now();
  EXPECT_TRUE(Eventually(
      [&] {
        std::optional<json> job = Get("pytorchjobs", "auto");
        return job && (*job)["spec"]["pytorchReplicaSpecs"]["Worker"].value("replicas", 0) == 2;
      },
      absl::Seconds(90), kKubectlPoll))
      << "HPA: " << Get("horizontalpodautoscalers.autoscaling", "auto").value_or(json()).dump();
  EXPECT_TRUE(WorkerPods("auto", 2)) << OperatorLogTail();
  std::fprintf(stderr, "[kube-e2e] HPA: Workers raised to minReplicas %s after the HPA existed\n",
               absl::FormatDuration(absl::Now() - begin).c_str());

  CmdResult r = Kubectl({"delete", "pytorchjob", "auto", "-n", ns()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(HpaGone("auto", absl::Seconds(90))) << "not garbage-collected";
}

}  // namespace
}  // namespace coach::e2e::kube
