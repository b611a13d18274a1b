#include "operator/reconcile/master_wait.h"

#include <gtest/gtest.h>

#include <string>

#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/desired_objects.h"
#include "operator/reconcile/launcher_wrap.h"

namespace coach::reconcile {
namespace {

using testing::MakePyTorchJob;
using testing::MakeTFJob;
using testing::MakeXGBoostJob;

constexpr char kImage[] = "ghcr.io/coach/coach-operator:1.2.3";

model::Job Annotated(model::Job job, const char* key, const char* value) {
  (*job.mutable_metadata()->mutable_annotations())[key] = value;
  return job;
}

Json InitContainers(const model::Job& job, const std::string& type,
                    const model::ReconcileConfig& config) {
  absl::StatusOr<model::KubeObject> pod = DesiredPod(job, type, 0, config);
  EXPECT_TRUE(pod.ok()) << pod.status();
  if (!pod.ok()) return Json::array();
  return pod->body["spec"].value("initContainers", Json::array());
}

model::ReconcileConfig KubeConfig() {
  model::ReconcileConfig config;
  config.pytorch_init_image = kImage;
  return config;
}

TEST(MasterWaitTest, WorkerWaitsForTheMastersNameWithUpstreamsResources) {
  const model::Job job = MakePyTorchJob("ns", "mnist").Master(1).Workers(2).Build();
  EXPECT_EQ(InitContainers(job, "Worker", KubeConfig()), Json::parse(R"([{
      "name": "init-pytorch", "image": "ghcr.io/coach/coach-operator:1.2.3",
      "imagePullPolicy": "IfNotPresent",
      "command": ["/usr/local/bin/coach-launch", "--wait-for-host", "mnist-master-0",
                  "--peer-timeout", "200s"],
      "resources": {"limits": {"cpu": "100m", "memory": "20Mi"},
                    "requests": {"cpu": "50m", "memory": "10Mi"}}}])"));
}

TEST(MasterWaitTest, WhenItIsAdded) {
  const model::Job seed = MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  model::ReconcileConfig local;  // no image: the local backend
  struct Case {
    const char* scenario;
    model::Job job;
    std::string type;
    model::ReconcileConfig config;
    bool added;
  };
  const Case cases[] = {
      {"worker of a job with a Master", seed, "Worker", KubeConfig(), true},
      {"the Master itself", seed, "Master", KubeConfig(), false},
      {"no Master (elastic, worker-only)",
       MakePyTorchJob("ns", "j").Workers(2).Elastic(1, 2).Build(), "Worker", KubeConfig(), false},
      {"local backend", seed, "Worker", local, false},
      {"opted out", Annotated(seed, kAnnotationWaitForMaster, "false"), "Worker", KubeConfig(),
       false},
      {"explicitly on", Annotated(seed, kAnnotationWaitForMaster, "true"), "Worker", KubeConfig(),
       true},
      {"coach-launch waits instead",
       Annotated(MakePyTorchJob("ns", "j")
                     .Master(1)
                     .Workers(1)
                     .Template("Worker", R"({"spec":{"containers":[{"name":"pytorch",
                         "image":"i","command":["python"]}]}})")
                     .Build(),
                 kAnnotationLauncher, "true"),
       "Worker", KubeConfig(), false},
      {"not a PyTorchJob or XGBoostJob", MakeTFJob("ns", "j").Chief(1).Workers(1).Build(), "Worker",
       KubeConfig(), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    bool found = false;
    for (const Json& init : InitContainers(c.job, c.type, c.config)) {
      found = found || init.value("name", "") == kMasterWaitContainer;
    }
    EXPECT_EQ(found, c.added);
  }
}

// Rabit resolves MASTER_ADDR once at start: XGBoost Workers wait for it too.
TEST(MasterWaitTest, XGBoostWorkersWaitForTheMaster) {
  const model::Job job = MakeXGBoostJob("ns", "xgb").Master(1).Workers(2).Build();
  const Json inits = InitContainers(job, "Worker", KubeConfig());
  ASSERT_EQ(inits.size(), 1u);
  EXPECT_EQ(inits[0]["name"], "init-xgboost");
  EXPECT_EQ(inits[0]["command"][2], "xgb-master-0");
  EXPECT_TRUE(InitContainers(job, "Master", KubeConfig()).empty());
}

TEST(MasterWaitTest, UsersOwnInitContainersStayAndTheirInitPytorchWins) {
  const model::Job job =
      MakePyTorchJob("ns", "j")
          .Master(1)
          .Workers(1)
          .Template("Worker", R"({"spec":{"initContainers":[{"name":"fetch","image":"f"}],
                                 "containers":[{"name":"pytorch","image":"i"}]}})")
          .Build();
  const Json inits = InitContainers(job, "Worker", KubeConfig());
  ASSERT_EQ(inits.size(), 2u);
  EXPECT_EQ(inits[0]["name"], "fetch");  // the user's first, as upstream appends
  EXPECT_EQ(inits[1]["name"], "init-pytorch");

  const model::Job own =
      MakePyTorchJob("ns", "j")
          .Master(1)
          .Workers(1)
          .Template("Worker", R"({"spec":{"initContainers":[{"name":"init-pytorch","image":"mine"}],
                                 "containers":[{"name":"pytorch","image":"i"}]}})")
          .Build();
  EXPECT_EQ(InitContainers(own, "Worker", KubeConfig()),
            Json::parse(R"([{"name":"init-pytorch","image":"mine"}])"));
}

TEST(MasterWaitTest, MaxTriesSetsTheDeadline) {
  model::ReconcileConfig config = KubeConfig();
  config.pytorch_init_max_tries = 5;
  const Json inits =
      InitContainers(MakePyTorchJob("ns", "j").Master(1).Workers(1).Build(), "Worker", config);
  ASSERT_EQ(inits.size(), 1u);
  EXPECT_EQ(inits[0]["command"][4], "10s");
}

TEST(MasterWaitTest, AnnotationValues) {
  const model::Job seed = MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  EXPECT_TRUE(ValidateWaitForMasterAnnotation(seed).ok());
  EXPECT_TRUE(
      ValidateWaitForMasterAnnotation(Annotated(seed, kAnnotationWaitForMaster, "true")).ok());
  const absl::Status bad =
      ValidateWaitForMasterAnnotation(Annotated(seed, kAnnotationWaitForMaster, "no"));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("metadata.annotations[coach.dev/wait-for-master]"),
            std::string::npos)
      << bad;
}

}  // namespace
}  // namespace coach::reconcile
