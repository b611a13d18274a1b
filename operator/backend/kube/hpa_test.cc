#include "operator/backend/kube/hpa.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "operator/model/testing/job_builder.h"

namespace coach::backend::kube {
namespace {

using nlohmann::json;
using reconcile::testing::MakePyTorchJob;

constexpr char kCpu[] =
    R"([{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization",)"
    R"("averageUtilization":80}}}])";

model::Job Elastic(std::optional<int> min, std::optional<int> max,
                   const std::string& metrics = kCpu) {
  model::Job job =
      MakePyTorchJob("team-a", "elastic").Workers(2).Elastic(min, max).Uid("uid-1").Build();
  job.mutable_spec()->mutable_elastic_policy()->set_metrics_json(metrics);
  return job;
}

TEST(HpaTest, DesiredHpaHasUpstreamsFields) {
  absl::StatusOr<std::optional<json>> hpa = DesiredHpa(Elastic(1, 4));
  ASSERT_TRUE(hpa.ok()) << hpa.status();
  ASSERT_TRUE(hpa->has_value());
  const json want = json::parse(R"({
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {
      "name": "elastic",
      "namespace": "team-a",
      "labels": {"coach.dev/job-name": "elastic"},
      "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                           "name": "elastic", "uid": "uid-1", "controller": true,
                           "blockOwnerDeletion": true}]
    },
    "spec": {
      "scaleTargetRef": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "elastic"},
      "minReplicas": 1,
      "maxReplicas": 4,
      "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                   "target": {"type": "Utilization", "averageUtilization": 80}}}]
    }
  })");
  EXPECT_EQ(**hpa, want) << (*hpa)->dump(2);
}

TEST(HpaTest, MinAndMaxAsDefaultingLeavesThem) {
  // Neither given: both the Worker replicas; one given: copied to the other (api/v1/defaults.h).
  const std::vector<std::pair<std::optional<int>, std::optional<int>>> given = {
      {std::nullopt, std::nullopt}, {std::nullopt, 5}, {3, std::nullopt}};
  const std::vector<std::pair<int, int>> want = {{2, 2}, {5, 5}, {3, 3}};
  for (size_t i = 0; i < given.size(); ++i) {
    absl::StatusOr<std::optional<json>> hpa = DesiredHpa(Elastic(given[i].first, given[i].second));
    ASSERT_TRUE(hpa.ok() && hpa->has_value()) << i;
    EXPECT_EQ((**hpa)["spec"]["minReplicas"], want[i].first) << i;
    EXPECT_EQ((**hpa)["spec"]["maxReplicas"], want[i].second) << i;
  }
}

TEST(HpaTest, NoHpaWithoutMetricsOrWhileSuspended) {
  model::Job job = Elastic(1, 4, "");
  ASSERT_TRUE(DesiredHpa(job).ok());
  EXPECT_FALSE(DesiredHpa(job)->has_value());
  job = MakePyTorchJob("team-a", "plain").Workers(2).Uid("u").Build();
  EXPECT_FALSE(DesiredHpa(job)->has_value());
  job = Elastic(1, 4);
  job.mutable_spec()->mutable_run_policy()->set_suspend(true);
  EXPECT_FALSE(DesiredHpa(job)->has_value());
  // An empty list is metrics, as upstream reads it (the API server defaults them).
  absl::StatusOr<std::optional<json>> empty = DesiredHpa(Elastic(1, 4, "[]"));
  ASSERT_TRUE(empty.ok() && empty->has_value());
  EXPECT_EQ((**empty)["spec"]["metrics"], json::array());
}

TEST(HpaTest, MetricsTheValidationRefusesMakeNoHpa) {
  for (const char* bad : {"{}", "[5]", R"([{"type":"Memory"}])", "[{}]"}) {
    absl::StatusOr<std::optional<json>> hpa = DesiredHpa(Elastic(1, 4, bad));
    EXPECT_EQ(hpa.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(hpa.status().message().find("spec.elasticPolicy.metrics"), std::string::npos)
        << hpa.status();
  }
  absl::StatusOr<std::optional<json>> hpa = DesiredHpa(Elastic(5, 2));
  EXPECT_EQ(hpa.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(hpa.status().message().find("spec.elasticPolicy.minReplicas"), std::string::npos);
}

TEST(HpaTest, TendsOnlyCoachsUnfinishedPyTorchJobs) {
  EXPECT_TRUE(TendsHpa(Elastic(1, 4)));
  EXPECT_FALSE(TendsHpa(
      reconcile::testing::MakePaddleJob("team-a", "p").Workers(2).Uid("u").Elastic(1, 4).Build()));
  model::Job no_uid = Elastic(1, 4);
  no_uid.mutable_metadata()->clear_uid();  // no owner reference can name it
  EXPECT_FALSE(TendsHpa(no_uid));
  model::Job managed = Elastic(1, 4);
  managed.mutable_spec()->mutable_run_policy()->set_managed_by("kueue.x-k8s.io/multikueue");
  EXPECT_FALSE(TendsHpa(managed));
  managed.mutable_spec()->mutable_run_policy()->set_managed_by("kubeflow.org/training-operator");
  EXPECT_TRUE(TendsHpa(managed));
  model::Job finished = Elastic(1, 4);
  auto* c = finished.mutable_status()->add_conditions();
  c->set_type("Succeeded");
  c->set_status("True");
  EXPECT_FALSE(TendsHpa(finished));
  model::Job deleting = Elastic(1, 4);
  deleting.mutable_metadata()->mutable_deletion_timestamp()->set_seconds(1);
  EXPECT_FALSE(TendsHpa(deleting));
}

// Each case: what the backend knows, what the job wants, the step.
TEST(HpaTest, NextStep) {
  const json desired = **DesiredHpa(Elastic(1, 4));
  json same = desired;
  same["metadata"]["resourceVersion"] = "7";
  same["spec"]["behavior"] = nullptr;  // absent to the API server
  json other = desired;
  other["spec"]["maxReplicas"] = 9;
  // What the API server made of a spec it normalised ("0.5" -> "500m").
  json normalised = desired;
  normalised["spec"]["metrics"][0]["resource"]["target"]["averageValue"] = "500m";
  json written = desired;
  written["spec"]["metrics"][0]["resource"]["target"]["averageValue"] = "0.5";

  struct Case {
    const char* scenario;
    std::optional<json> desired;
    HpaView view;
    HpaStep want;
  };
  const std::vector<Case> cases = {
      {"new job", desired, {}, HpaStep::kCreate},
      {"created, the cache lags", desired, {nullptr, true, false, "", ""}, HpaStep::kNone},
      {"in place", desired, {&same, false, false, "", ""}, HpaStep::kNone},
      {"metrics or bounds changed", desired, {&other, false, false, "", ""}, HpaStep::kPatch},
      {"someone edited it",
       desired,
       {&other, false, false, desired["spec"].dump(), ""},
       HpaStep::kPatch},
      {"the server's answer to this spec",
       written,
       {&normalised, false, false, written["spec"].dump(), normalised["spec"].dump()},
       HpaStep::kNone},
      {"the answer to an older spec",
       written,
       {&normalised, false, false, desired["spec"].dump(), normalised["spec"].dump()},
       HpaStep::kPatch},
      {"the old one still being deleted", desired, {&other, false, true, "", ""}, HpaStep::kNone},
      {"metrics removed", std::nullopt, {&same, false, false, "", ""}, HpaStep::kDelete},
      {"metrics removed, delete sent", std::nullopt, {&same, false, true, "", ""}, HpaStep::kNone},
      {"none wanted, none there", std::nullopt, {}, HpaStep::kNone},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(HpaStepName(NextHpaStep(c.desired, c.view)), std::string(HpaStepName(c.want)))
        << c.scenario;
  }
}

TEST(HpaTest, SameSpecIgnoresNullMembers) {
  EXPECT_TRUE(SameHpaSpec(json::parse(R"({"a":1,"b":null,"c":[{"d":null,"e":2}]})"),
                          json::parse(R"({"a":1,"c":[{"e":2}]})")));
  EXPECT_FALSE(SameHpaSpec(json::parse(R"({"a":1})"), json::parse(R"({"a":2})")));
  EXPECT_FALSE(SameHpaSpec(json::parse(R"({"m":[1,2]})"), json::parse(R"({"m":[2,1]})")));
}

TEST(HpaTest, PatchReplacesTheSpecAndLabelsIt) {
  const json desired = **DesiredHpa(Elastic(2, 3));
  json current = desired;
  current["metadata"]["labels"] = {{"team", "a"}};
  current["spec"]["behavior"] = {{"scaleDown", {{"stabilizationWindowSeconds", 60}}}};
  current["spec"]["metrics"].push_back({{"type", "Pods"}});
  const json patch = HpaPatch(desired, current);
  json want_spec = desired["spec"];
  want_spec["behavior"] = nullptr;
  EXPECT_EQ(patch["spec"], want_spec) << patch.dump(2);
  EXPECT_EQ(patch["metadata"], json::parse(R"({"labels":{"coach.dev/job-name":"elastic"}})"));
}

TEST(HpaTest, OwnedByJobNamesTheUid) {
  const json hpa = **DesiredHpa(Elastic(1, 4));
  EXPECT_TRUE(OwnedByJob(hpa, "uid-1"));
  EXPECT_FALSE(OwnedByJob(hpa, "uid-2"));
  EXPECT_FALSE(OwnedByJob(hpa, ""));
  EXPECT_FALSE(OwnedByJob(json::parse(R"({"metadata":{"name":"elastic"}})"), "uid-1"));
}

}  // namespace
}  // namespace coach::backend::kube
