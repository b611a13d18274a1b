#include "operator/reconcile/train_job_objects.h"

#include <memory>

#include "gtest/gtest.h"

namespace coach::reconcile {
namespace {

using nlohmann::json;

const json kOwners = json::parse(R"([{"apiVersion": "trainer.kubeflow.org/v1alpha1",
  "kind": "TrainJob", "name": "tj", "uid": "u-1", "controller": true,
  "blockOwnerDeletion": true}])");

json JobSet(json spec, json annotations = json::object()) {
  return {{"metadata", {{"name", "tj"}, {"namespace", "team"}, {"annotations", annotations}}},
          {"spec", std::move(spec)}};
}

TEST(MpiSshAuthSecretTest, NamedTypedImmutableOwnedAndWithoutKeys) {
  const json secret = MpiSshAuthSecret("tj", "team", kOwners);
  EXPECT_EQ(secret["metadata"]["name"], "tj-mpi-ssh-auth");
  EXPECT_EQ(secret["metadata"]["namespace"], "team");
  EXPECT_EQ(secret["type"], "kubernetes.io/ssh-auth");
  EXPECT_EQ(secret["immutable"], true);
  EXPECT_EQ(secret["metadata"]["ownerReferences"], kOwners);
  EXPECT_FALSE(secret.contains("data"));
}

TEST(VolumeClaimsTest, OnePerTemplateNamedAfterTheTemplateAndTheJob) {
  const json spec = json::parse(R"({"volumeClaimPolicies": [
    {"templates": [{"metadata": {"name": "initializer", "labels": {"tier": "fast"},
                                 "annotations": {"a": "b"}},
                    "spec": {"accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "20Gi"}}}}]},
    {"retentionPolicy": {"whenDeleted": "Delete"},
     "templates": [{"metadata": {"name": "scratch"}, "spec": {}}]},
    {"retentionPolicy": {"whenDeleted": "Retain"},
     "templates": [{"metadata": {"name": "keep"}, "spec": {}}]}]})");
  const std::vector<json> claims = VolumeClaims(JobSet(spec), kOwners);
  ASSERT_EQ(claims.size(), 3u);
  EXPECT_EQ(claims[0]["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(claims[0]["metadata"]["name"], "initializer-tj");
  EXPECT_EQ(claims[0]["metadata"]["namespace"], "team");
  EXPECT_EQ(claims[0]["metadata"]["labels"],
            json::parse(R"({"tier": "fast", "jobset.sigs.k8s.io/jobset-name": "tj"})"));
  EXPECT_EQ(claims[0]["metadata"]["annotations"], json::parse(R"({"a": "b"})"));
  EXPECT_EQ(claims[0]["spec"]["resources"]["requests"]["storage"], "20Gi");
  // JobSet: no retentionPolicy, no owner (the claim outlives the job); Delete: owned; Retain: not.
  EXPECT_FALSE(claims[0]["metadata"].contains("ownerReferences"));
  EXPECT_EQ(claims[1]["metadata"]["name"], "scratch-tj");
  EXPECT_EQ(claims[1]["metadata"]["ownerReferences"], kOwners);
  EXPECT_FALSE(claims[2]["metadata"].contains("ownerReferences"));
}

TEST(VolumeClaimsTest, NoneWithoutPolicies) {
  EXPECT_TRUE(VolumeClaims(JobSet(json::object()), kOwners).empty());
}

struct Pods {
  std::vector<json> bodies;
  std::vector<json*> pointers;
  Pods(std::initializer_list<json> b) : bodies(b) {
    for (json& p : bodies) pointers.push_back(&p);
  }
};

// Any plan: the local backend's mark.
class LocalPlan : public model::AddressPlan {
 public:
  std::string Host(const api::v1::TrainingJob&, std::string_view, int) const override {
    return "127.0.0.1";
  }
  std::string QualifiedHost(const api::v1::TrainingJob&, std::string_view, int) const override {
    return "127.0.0.1";
  }
  int Port(const api::v1::TrainingJob&, std::string_view, int, std::string_view,
           int declared) const override {
    return declared;
  }
};

json Pod(json spec) { return {{"metadata", {{"name", "p"}}}, {"spec", std::move(spec)}}; }

TEST(GangOfTest, CoschedulingPodGroupCountsEveryPodAndItsRequests) {
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kSchedulerPlugins;
  Pods pods{Pod(json::parse(R"({"containers": [
                 {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                 {"resources": {"requests": {"cpu": "500m"}, "limits": {"nvidia.com/gpu": "1"}}}],
               "initContainers": [{"resources": {"requests": {"cpu": "4"}}}]})")),
            Pod(json::parse(R"({"containers": [{"resources": {"requests": {"cpu": "1"}}}],
               "overhead": {"memory": "512Mi"}})"))};
  absl::StatusOr<TrainJobGang> gang = GangOf(
      JobSet(json::object()), json::parse(R"({"coscheduling": {"scheduleTimeoutSeconds": 120}})"),
      config, pods.pointers, kOwners);
  ASSERT_TRUE(gang.ok()) << gang.status();
  const json& pg = gang->pod_group;
  EXPECT_EQ(pg["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(pg["metadata"]["name"], "tj");
  EXPECT_EQ(pg["metadata"]["ownerReferences"], kOwners);
  EXPECT_EQ(pg["spec"]["minMember"], 2);
  EXPECT_EQ(pg["spec"]["scheduleTimeoutSeconds"], 120);
  // Pod 1: max(1 + 500m, init 4) cpu, 1Gi; limits are not requests. Pod 2: 1 cpu + 512Mi overhead.
  EXPECT_EQ(pg["spec"]["minResources"], json::parse(R"({"cpu": "5", "memory": "1536Mi"})"));
  for (const json& p : pods.bodies) {
    EXPECT_EQ(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "tj");
  }
}

TEST(GangOfTest, VolcanoPodGroupTakesQueuePriorityAndTopology) {
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kVolcano;
  Pods pods{Pod(json::parse(R"({"priorityClassName": "high", "containers": []})"))};
  absl::StatusOr<TrainJobGang> gang = GangOf(
      JobSet(json::object(), {{"scheduling.volcano.sh/queue-name", "research"}}),
      json::parse(R"({"volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}})"),
      config, pods.pointers, kOwners);
  ASSERT_TRUE(gang.ok()) << gang.status();
  const json& pg = gang->pod_group;
  EXPECT_EQ(pg["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(pg["spec"]["minMember"], 1);
  EXPECT_EQ(pg["spec"]["queue"], "research");
  EXPECT_EQ(pg["spec"]["priorityClassName"], "high");
  EXPECT_EQ(pg["spec"]["networkTopology"]["mode"], "hard");
  EXPECT_FALSE(pg["spec"].contains("scheduleTimeoutSeconds"));
  EXPECT_EQ(pods.bodies[0]["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "tj");
}

TEST(GangOfTest, DefaultScheduleTimeoutIsSixtySeconds) {
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kSchedulerPlugins;
  Pods pods{Pod(json::object())};
  absl::StatusOr<TrainJobGang> gang =
      GangOf(JobSet(json::object()), json::parse(R"({"coscheduling": {}})"), config, pods.pointers,
             kOwners);
  ASSERT_TRUE(gang.ok());
  EXPECT_EQ(gang->pod_group["spec"]["scheduleTimeoutSeconds"], 60);
}

TEST(GangOfTest, APolicyTheOperatorCannotServeWaitsNamingTheFlag) {
  model::ReconcileConfig config;  // no gang scheduler
  Pods pods{Pod(json::object())};
  absl::StatusOr<TrainJobGang> gang = GangOf(
      JobSet(json::object()), json::parse(R"({"volcano": {}})"), config, pods.pointers, kOwners);
  ASSERT_TRUE(absl::IsFailedPrecondition(gang.status())) << gang.status();
  EXPECT_EQ(gang.status().message(),
            "spec.podGroupPolicy.volcano of the runtime needs the operator's "
            "--gang-scheduler=volcano (it runs with none)");
  EXPECT_FALSE(pods.bodies[0]["metadata"].contains("annotations"));
}

TEST(GangOfTest, NothingWithoutAPolicyOrOnTheLocalBackend) {
  model::ReconcileConfig config;
  Pods pods{Pod(json::object())};
  absl::StatusOr<TrainJobGang> none =
      GangOf(JobSet(json::object()), json(), config, pods.pointers, kOwners);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->pod_group.is_null());
  config.address_plan = std::make_shared<LocalPlan>();
  absl::StatusOr<TrainJobGang> local =
      GangOf(JobSet(json::object()), json::parse(R"({"coscheduling": {}})"), config, pods.pointers,
             kOwners);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(local->pod_group.is_null());
  EXPECT_FALSE(pods.bodies[0]["metadata"].contains("labels"));
}

}  // namespace
}  // namespace coach::reconcile
