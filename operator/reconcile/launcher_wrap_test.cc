#include "operator/reconcile/launcher_wrap.h"

#include <gtest/gtest.h>

#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/desired_objects.h"

namespace coach::reconcile {
namespace {

using testing::MakePyTorchJob;

constexpr char kWorkerTemplate[] = R"({"spec":{"containers":[
  {"name":"sidecar","image":"s","command":["side"]},
  {"name":"pytorch","image":"user/train:1","command":["python","train.py"],"args":["--lr","0.1"],
   "volumeMounts":[{"name":"data","mountPath":"/data"}]}],
  "volumes":[{"name":"data","emptyDir":{}}]}})";

model::Job Job(const char* launcher) {
  model::Job job = MakePyTorchJob("ns", "j").Workers(1).Template("Worker", kWorkerTemplate).Build();
  if (launcher != nullptr)
    (*job.mutable_metadata()->mutable_annotations())[kAnnotationLauncher] = launcher;
  return job;
}

Json PodSpec(const model::Job& job, const model::ReconcileConfig& config) {
  absl::StatusOr<model::KubeObject> pod = DesiredPod(job, "Worker", 0, config);
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? pod->body["spec"] : Json::object();
}

TEST(LauncherWrapTest, KubeFormAddsVolumeInitContainerMountAndWrapsCommand) {
  model::ReconcileConfig config;
  config.launcher_image = "ghcr.io/coach/coach-operator:1.2.3";
  const Json spec = PodSpec(Job("true"), config);
  EXPECT_EQ(spec["volumes"], Json::parse(R"([{"name":"data","emptyDir":{}},
                                             {"name":"coach-launch","emptyDir":{}}])"));
  EXPECT_EQ(spec["initContainers"], Json::parse(R"([{"name":"coach-launch-install",
      "image":"ghcr.io/coach/coach-operator:1.2.3",
      "command":["/usr/local/bin/coach-launch","--install","/coach"],
      "volumeMounts":[{"name":"coach-launch","mountPath":"/coach"}]}])"));
  const Json& c = spec["containers"][1];
  EXPECT_EQ(c["volumeMounts"], Json::parse(R"([{"name":"data","mountPath":"/data"},
      {"name":"coach-launch","mountPath":"/coach","readOnly":true}])"));
  EXPECT_EQ(c["command"], Json::parse(R"(["/coach/lib/ld.so","--library-path","/coach/lib",
      "/coach/bin/coach-launch","--","python","train.py"])"));
  EXPECT_EQ(c["args"], Json::parse(R"(["--lr","0.1"])"));
  EXPECT_EQ(c["image"], "user/train:1");
  // Only the default container.
  EXPECT_EQ(spec["containers"][0]["command"], Json::parse(R"(["side"])"));
  EXPECT_FALSE(spec["containers"][0].contains("volumeMounts"));
}

TEST(LauncherWrapTest, LocalFormUsesCoachLaunchFromPath) {
  const Json spec = PodSpec(Job("true"), model::ReconcileConfig{});
  EXPECT_FALSE(spec.contains("initContainers"));
  EXPECT_EQ(spec["volumes"], Json::parse(R"([{"name":"data","emptyDir":{}}])"));
  const Json& c = spec["containers"][1];
  EXPECT_EQ(c["command"], Json::parse(R"(["coach-launch","--","python","train.py"])"));
  EXPECT_EQ(c["args"], Json::parse(R"(["--lr","0.1"])"));
  EXPECT_EQ(c["volumeMounts"], Json::parse(R"([{"name":"data","mountPath":"/data"}])"));
}

TEST(LauncherWrapTest, NoAnnotationOrFalseLeavesThePodUnchanged) {
  model::ReconcileConfig config;
  config.launcher_image = "img";
  const Json plain = PodSpec(Job(nullptr), config);
  EXPECT_EQ(PodSpec(Job("false"), config), plain);
  EXPECT_FALSE(plain.contains("initContainers"));
  EXPECT_EQ(plain["containers"][1]["command"], Json::parse(R"(["python","train.py"])"));
}

TEST(LauncherWrapTest, ValidateAnnotation) {
  EXPECT_TRUE(ValidateLauncherAnnotation(Job(nullptr)).ok());
  EXPECT_TRUE(ValidateLauncherAnnotation(Job("true")).ok());
  EXPECT_TRUE(ValidateLauncherAnnotation(Job("false")).ok());
  absl::Status bad = ValidateLauncherAnnotation(Job("yes"));
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_NE(std::string(bad.message()).find("metadata.annotations[coach.dev/launcher]"),
            std::string::npos)
      << bad;

  model::Job no_command = MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  (*no_command.mutable_metadata()->mutable_annotations())[kAnnotationLauncher] = "true";
  absl::Status missing = ValidateLauncherAnnotation(no_command);
  EXPECT_TRUE(absl::IsInvalidArgument(missing));
  EXPECT_NE(std::string(missing.message())
                .find("spec.pytorchReplicaSpecs.Master.template.spec.containers[0].command"),
            std::string::npos)
      << missing;
  (*no_command.mutable_metadata()->mutable_annotations())[kAnnotationLauncher] = "false";
  EXPECT_TRUE(ValidateLauncherAnnotation(no_command).ok());
}

}  // namespace
}  // namespace coach::reconcile
