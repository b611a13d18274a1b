#include "operator/backend/kube/earlier_objects.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "operator/backend/kube/client/resource.h"
#include "operator/backend/kube/testing/fake_kube_client.h"

namespace coach::backend::kube {
namespace {

using nlohmann::json;
namespace r = kubeclient::resources;

json Labelled(const std::string& name, json labels) {
  return {{"metadata", {{"name", name}, {"labels", std::move(labels)}}}};
}

// What upstream's training-operator puts on a PyTorchJob's pods and Services.
json Upstream(const std::string& job) {
  return {{"training.kubeflow.org/operator-name", "pytorchjob-controller"},
          {"training.kubeflow.org/job-name", job},
          {"training.kubeflow.org/replica-type", "worker"},
          {"training.kubeflow.org/replica-index", "0"}};
}

std::string CoachLabel(kubeclient::KubeClient& client, const kubeclient::ResourceDescriptor& res,
                       const std::string& ns, const std::string& name) {
  auto got = client.Get(res, ns, name);
  EXPECT_TRUE(got.ok()) << got.status();
  if (!got.ok()) return "<missing>";
  return (*got)["metadata"]["labels"].value("coach.dev/job-name", "");
}

TEST(LabelEarlierOperatorObjects, LabelsUpstreamPodsAndServicesOnly) {
  kubeclient::testing::FakeKubeClient client;
  ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled("old-worker-0", Upstream("old"))).ok());
  ASSERT_TRUE(client.Create(r::Services(), "a", Labelled("old-worker-0", Upstream("old"))).ok());
  json ours = Upstream("new");
  ours["coach.dev/job-name"] = "new";
  ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled("new-worker-0", ours)).ok());
  ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled("unrelated", {{"app", "web"}})).ok());
  json nameless = Upstream("x");
  nameless.erase("training.kubeflow.org/job-name");
  ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled("nameless", nameless)).ok());
  ASSERT_TRUE(client.Create(r::Pods(), "b", Labelled("elsewhere", Upstream("other"))).ok());
  client.ClearCalls();

  auto result = LabelEarlierOperatorObjects(&client, {"a"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->labelled, 2);
  EXPECT_EQ(result->failed, 0);
  EXPECT_EQ(CoachLabel(client, r::Pods(), "a", "old-worker-0"), "old");
  EXPECT_EQ(CoachLabel(client, r::Services(), "a", "old-worker-0"), "old");
  EXPECT_EQ(CoachLabel(client, r::Pods(), "a", "unrelated"), "");
  EXPECT_EQ(CoachLabel(client, r::Pods(), "a", "nameless"), "");
  EXPECT_EQ(CoachLabel(client, r::Pods(), "b", "elsewhere"), "");  // not watched
  // Only the one new label: upstream's stay as they were.
  auto pod = client.Get(r::Pods(), "a", "old-worker-0");
  ASSERT_TRUE(pod.ok());
  json want = Upstream("old");
  want["coach.dev/job-name"] = "old";
  EXPECT_EQ((*pod)["metadata"]["labels"], want);
  EXPECT_EQ(client.calls("Patch").size(), 2u);

  // A second start finds nothing left to label.
  client.ClearCalls();
  result = LabelEarlierOperatorObjects(&client, {"a"});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->labelled, 0);
  EXPECT_TRUE(client.calls("Patch").empty());
}

TEST(LabelEarlierOperatorObjects, AllNamespacesAndEveryPage) {
  kubeclient::testing::FakeKubeClient client;
  constexpr int kPods = 1203;  // more than two pages
  for (int i = 0; i < kPods; ++i) {
    const std::string ns = i % 2 == 0 ? "a" : "b";
    ASSERT_TRUE(
        client.Create(r::Pods(), ns, Labelled(absl::StrCat("p-", i), Upstream("job"))).ok());
  }
  auto result = LabelEarlierOperatorObjects(&client, {""});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->labelled, kPods);
  kubeclient::ListOptions unlabelled;
  unlabelled.label_selector = "!coach.dev/job-name";
  auto left = client.List(r::Pods(), "", unlabelled);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->items.empty());
  EXPECT_GE(client.calls("List").size(), 4u);  // pods in 3 pages, then Services
}

TEST(LabelEarlierOperatorObjects, AFailedPatchIsCountedAndTheRestGoOn) {
  kubeclient::testing::FakeKubeClient client;
  for (const char* name : {"p-0", "p-1", "p-2"}) {
    ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled(name, Upstream("job"))).ok());
  }
  client.FailNext("Patch", absl::PermissionDeniedError("pods is forbidden"));
  auto result = LabelEarlierOperatorObjects(&client, {"a"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->labelled, 2);
  EXPECT_EQ(result->failed, 1);
}

TEST(LabelEarlierOperatorObjects, AnObjectChangedSinceTheListIsStillLabelled) {
  kubeclient::testing::FakeKubeClient client;
  ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled("p", Upstream("job"))).ok());
  // Between the List and the Patch, the pod's status changes (as a running pod's does).
  client.SetErrorHook([&client](const kubeclient::testing::FakeCall& call) {
    if (call.method == "Patch") {
      client.SetErrorHook(nullptr);
      auto updated = client.PatchStatus(r::Pods(), "a", "p", kubeclient::PatchType::kMerge,
                                        {{"status", {{"phase", "Running"}}}});
      EXPECT_TRUE(updated.ok()) << updated.status();
    }
    return absl::OkStatus();
  });
  auto result = LabelEarlierOperatorObjects(&client, {"a"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->labelled, 1);
  EXPECT_EQ(CoachLabel(client, r::Pods(), "a", "p"), "job");
}

TEST(LabelEarlierOperatorObjects, AnObjectMadeAgainSinceTheListIsLeftAlone) {
  kubeclient::testing::FakeKubeClient client;
  ASSERT_TRUE(client.Create(r::Pods(), "a", Labelled("p", Upstream("job"))).ok());
  // Between the List and the Patch, the pod is deleted and another made under its name.
  client.SetErrorHook([&client](const kubeclient::testing::FakeCall& call) {
    if (call.method == "Patch") {
      client.SetErrorHook(nullptr);
      EXPECT_TRUE(client.Delete(r::Pods(), "a", "p", {}).ok());
      EXPECT_TRUE(client.Create(r::Pods(), "a", Labelled("p", Upstream("job"))).ok());
    }
    return absl::OkStatus();
  });
  auto result = LabelEarlierOperatorObjects(&client, {"a"});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->labelled, 0);
  EXPECT_EQ(result->failed, 1);
  EXPECT_EQ(CoachLabel(client, r::Pods(), "a", "p"), "");
}

TEST(LabelEarlierOperatorObjects, AListErrorIsReturned) {
  kubeclient::testing::FakeKubeClient client;
  client.FailNext("List", absl::UnavailableError("apiserver down"));
  auto result = LabelEarlierOperatorObjects(&client, {"a"});
  EXPECT_TRUE(absl::IsUnavailable(result.status())) << result.status();
}

}  // namespace
}  // namespace coach::backend::kube
