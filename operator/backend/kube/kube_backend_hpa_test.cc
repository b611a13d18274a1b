// KubeBackend's HorizontalPodAutoscaler of an elastic PyTorchJob (hpa.h), against FakeKubeClient:
// each Observe of the leader brings the HPA to what the job says, with no request while it is.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/eventually.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "operator/backend/kube/hpa.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/model/testing/job_builder.h"

namespace coach::backend::kube {
namespace {

using coach::kubeclient::testing::FakeKubeClient;
using nlohmann::json;

constexpr char kNs[] = "team-a";
constexpr char kCpu[] =
    R"([{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization",)"
    R"("averageUtilization":80}}}])";

model::Job ElasticJob(int min, int max, const std::string& metrics = kCpu) {
  model::Job job = reconcile::testing::MakePyTorchJob(kNs, "el")
                       .Workers(2)
                       .Elastic(min, max)
                       .Uid("uid-el")
                       .Build();
  job.mutable_spec()->mutable_elastic_policy()->set_metrics_json(metrics);
  return job;
}

class KubeBackendHpaTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (backend_) backend_->Stop();
  }
  void StartBackend() {
    KubeBackendOptions options;
    options.client = &fake_;
    options.reflector.initial_backoff = absl::Milliseconds(10);
    auto b = KubeBackend::Create(std::move(options));
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = std::move(b).value();
    backend_->SetChangeCallback([this](const std::string& ns, const std::string& name) {
      std::lock_guard<std::mutex> l(mu_);
      changes_.push_back(ns + "/" + name);
    });
    ASSERT_TRUE(backend_->Start().ok());
  }
  // One Observe, as a pass starts; fails the test unless it is OK.
  void Observe(const model::Job& job) {
    absl::StatusOr<model::ObservedState> observed = backend_->Observe(job);
    EXPECT_TRUE(observed.ok()) << observed.status();
  }
  std::optional<json> Hpa() {
    absl::StatusOr<json> got = fake_.Get(HorizontalPodAutoscalers(), kNs, "el");
    if (!got.ok()) return std::nullopt;
    return *got;
  }
  // The cache holds `n` HPAs and the job has no pending expectation.
  bool Settled(size_t n) {
    return ::coach::testing::Eventually(
        [&] {
          return backend_->CachedCount(kHpaKind) == n &&
                 backend_->PendingExpectations(kNs, "el").empty();
        },
        absl::Seconds(10), absl::Milliseconds(5));
  }
  int Writes() {
    int n = 0;
    for (const auto& c : fake_.calls()) {
      if (c.resource == "horizontalpodautoscalers.autoscaling" &&
          (c.method == "Create" || c.method == "Patch" || c.method == "Delete")) {
        ++n;
      }
    }
    return n;
  }
  int Changes() {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(changes_.size());
  }

  FakeKubeClient fake_;
  std::unique_ptr<KubeBackend> backend_;
  std::mutex mu_;
  std::vector<std::string> changes_;
};

TEST_F(KubeBackendHpaTest, CreatedThenLeftAloneWhileAsTheJobSays) {
  StartBackend();
  const model::Job job = ElasticJob(1, 4);
  Observe(job);
  std::optional<json> hpa = Hpa();
  ASSERT_TRUE(hpa.has_value());
  EXPECT_EQ((*hpa)["spec"], (**DesiredHpa(job))["spec"]);
  EXPECT_EQ((*hpa)["metadata"]["labels"]["coach.dev/job-name"], "el");
  EXPECT_EQ((*hpa)["metadata"]["ownerReferences"][0]["uid"], "uid-el");
  // The cache lags: the expectation keeps a second pass from creating it again.
  Observe(job);
  EXPECT_EQ(Writes(), 1);
  ASSERT_TRUE(Settled(1));
  Observe(job);
  Observe(job);
  EXPECT_EQ(Writes(), 1);
}

TEST_F(KubeBackendHpaTest, ChangedMetricsPatchRemovedMetricsDelete) {
  StartBackend();
  Observe(ElasticJob(1, 4));
  ASSERT_TRUE(Settled(1));
  const std::string uid = (*Hpa())["metadata"]["uid"];

  const std::string pods =
      R"([{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue",)"
      R"("averageValue":"10"}}}])";
  const model::Job changed = ElasticJob(2, 6, pods);
  Observe(changed);
  EXPECT_EQ((*Hpa())["spec"], (**DesiredHpa(changed))["spec"]);
  EXPECT_EQ((*Hpa())["metadata"]["uid"], uid) << "patched in place";
  ASSERT_TRUE(Settled(1));

  // Someone edits it: the next pass (the watch wakes the job) puts the job's spec back.
  const int changes = Changes();
  ASSERT_TRUE(fake_
                  .Patch(HorizontalPodAutoscalers(), kNs, "el",
                         coach::kubeclient::PatchType::kMerge,
                         json::parse(R"({"spec":{"maxReplicas":99,"behavior":{"x":1}}})"))
                  .ok());
  ASSERT_TRUE(::coach::testing::Eventually([&] { return Changes() > changes; }));
  Observe(changed);
  EXPECT_EQ((*Hpa())["spec"], (**DesiredHpa(changed))["spec"]);

  Observe(ElasticJob(2, 6, ""));
  EXPECT_FALSE(Hpa().has_value());
  bool precondition = false;
  for (const auto& c : fake_.calls("Delete")) {
    precondition = precondition || c.body.dump().find(uid) != std::string::npos;
  }
  EXPECT_TRUE(precondition) << "deleted naming the uid it had";
  ASSERT_TRUE(Settled(0));
  const int writes = Writes();
  Observe(ElasticJob(2, 6, ""));
  EXPECT_EQ(Writes(), writes);
}

TEST_F(KubeBackendHpaTest, SuspendDeletesResumeCreates) {
  StartBackend();
  model::Job job = ElasticJob(1, 4);
  Observe(job);
  ASSERT_TRUE(Settled(1));
  job.mutable_spec()->mutable_run_policy()->set_suspend(true);
  Observe(job);
  EXPECT_FALSE(Hpa().has_value());
  ASSERT_TRUE(Settled(0));
  job.mutable_spec()->mutable_run_policy()->set_suspend(false);
  Observe(job);
  EXPECT_TRUE(Hpa().has_value());
}

TEST_F(KubeBackendHpaTest, StatusChangesWakeNoJob) {
  StartBackend();
  Observe(ElasticJob(1, 4));
  ASSERT_TRUE(Settled(1));
  ASSERT_TRUE(::coach::testing::Eventually([&] { return Changes() >= 1; }));
  const int changes = Changes();
  json hpa = *Hpa();
  hpa["status"] = {{"currentReplicas", 2}, {"desiredReplicas", 3}};
  ASSERT_TRUE(fake_.UpdateStatus(HorizontalPodAutoscalers(), kNs, hpa).ok());
  // A label change after it does wake the job: the watch delivered both by then.
  ASSERT_TRUE(fake_
                  .Patch(HorizontalPodAutoscalers(), kNs, "el",
                         coach::kubeclient::PatchType::kMerge,
                         json::parse(R"({"metadata":{"labels":{"team":"a"}}})"))
                  .ok());
  ASSERT_TRUE(::coach::testing::Eventually([&] { return Changes() > changes; }));
  EXPECT_EQ(Changes(), changes + 1);
}

// An HPA upstream's operator made (no coach label) and the job owns is taken over; one the job
// does not own is left alone.
TEST_F(KubeBackendHpaTest, TakesOverItsOwnHpaOnlyOutsideTheCache) {
  json upstream = **DesiredHpa(ElasticJob(1, 2));
  upstream["metadata"].erase("labels");
  ASSERT_TRUE(fake_.Create(HorizontalPodAutoscalers(), kNs, upstream).ok());
  StartBackend();
  const model::Job job = ElasticJob(1, 4);
  Observe(job);
  std::optional<json> hpa = Hpa();
  ASSERT_TRUE(hpa.has_value());
  EXPECT_EQ((*hpa)["spec"]["maxReplicas"], 4);
  EXPECT_EQ((*hpa)["metadata"]["labels"]["coach.dev/job-name"], "el");
  ASSERT_TRUE(Settled(1));

  ASSERT_TRUE(fake_.Delete(HorizontalPodAutoscalers(), kNs, "el", {}).ok());
  json foreign = upstream;
  foreign["metadata"].erase("ownerReferences");
  ASSERT_TRUE(fake_.Create(HorizontalPodAutoscalers(), kNs, foreign).ok());
  ASSERT_TRUE(Settled(0));
  fake_.ClearCalls();
  Observe(job);
  EXPECT_EQ(fake_.calls("Patch").size(), 0u);
  EXPECT_EQ((*Hpa())["spec"]["maxReplicas"], 2) << "not the job's: left as it is";
  EXPECT_TRUE(backend_->PendingExpectations(kNs, "el").empty());
}

TEST_F(KubeBackendHpaTest, OnlyAnUnansweredRequestHoldsThePassUp) {
  StartBackend();
  const model::Job job = ElasticJob(1, 4);
  fake_.FailNext("Create", absl::PermissionDeniedError("horizontalpodautoscalers is forbidden"));
  Observe(job);
  EXPECT_FALSE(Hpa().has_value());
  fake_.FailNext("Create", absl::UnavailableError("connection refused"));
  absl::StatusOr<model::ObservedState> observed = backend_->Observe(job);
  EXPECT_TRUE(absl::IsUnavailable(observed.status())) << observed.status();
  EXPECT_NE(observed.status().message().find("HorizontalPodAutoscaler team-a/el"),
            std::string::npos);
  Observe(job);
  EXPECT_TRUE(Hpa().has_value());
}

TEST_F(KubeBackendHpaTest, LeavesOtherJobsAndUnwatchableClustersAlone) {
  fake_.SetErrorHook([](const coach::kubeclient::testing::FakeCall& call) {
    return call.resource == "horizontalpodautoscalers.autoscaling" && call.method == "List"
               ? absl::PermissionDeniedError("forbidden")
               : absl::OkStatus();
  });
  StartBackend();
  Observe(ElasticJob(1, 4));
  EXPECT_EQ(Writes(), 0);
  fake_.SetErrorHook(nullptr);
  backend_->Stop();
  backend_.reset();

  StartBackend();
  model::Job managed = ElasticJob(1, 4);
  managed.mutable_spec()->mutable_run_policy()->set_managed_by("kueue.x-k8s.io/multikueue");
  Observe(managed);
  Observe(reconcile::testing::MakePaddleJob(kNs, "el").Workers(2).Elastic(1, 4).Build());
  EXPECT_EQ(Writes(), 0);
}

}  // namespace
}  // namespace coach::backend::kube
