#include "operator/reconcile/gang.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "operator/model/testing/job_builder.h"

// Expected values: kubeflow-v1.md, "runPolicy and restarts" (schedulingPolicy) and
// "Operator surface upstream" (gang scheduling), i.e. upstream v1.9.4's
// pkg/controller.v1/common/job.go (ReconcileJobs: queue "default", minResources from
// calcPGMinResources when not given), pkg/controller.v1/common/util.go (CalcPGMinResources,
// AddResourceList) and the PodGroup types (Volcano's minResources is a pointer, written even
// when empty; scheduler-plugins' is an omitempty map).

namespace coach::reconcile {
namespace {

using model::GangScheduler;
using model::Json;
using namespace coach::reconcile::testing;  // NOLINT

constexpr GangScheduler kNone = GangScheduler::kNone;
constexpr GangScheduler kVolcano = GangScheduler::kVolcano;
constexpr GangScheduler kPlugins = GangScheduler::kSchedulerPlugins;

struct Policy {
  std::optional<int> min_available = std::nullopt;
  std::string queue = "";
  std::string priority_class = "";
  std::vector<std::pair<std::string, std::string>> min_resources = {};
  std::optional<int> schedule_timeout_seconds = std::nullopt;
};

// PyTorchJob ns/g: 1 Master + 2 Workers (3 replicas in all).
model::Job Job(const Policy& p) {
  JobBuilder b = MakePyTorchJob("ns", "g").Master(1).Workers(2);
  if (p.min_available) b.MinAvailable(*p.min_available);
  if (!p.queue.empty()) b.Queue(p.queue);
  if (!p.priority_class.empty()) b.PriorityClass(p.priority_class);
  for (const auto& [name, quantity] : p.min_resources) b.MinResource(name, quantity);
  if (p.schedule_timeout_seconds) b.ScheduleTimeoutSeconds(*p.schedule_timeout_seconds);
  return b.Build();
}

TEST(GangTest, PodGroup) {
  struct Case {
    const char* scenario;
    GangScheduler scheduler;
    Policy policy;
    const char* api_version;  // "": no PodGroup
    const char* spec;
  };
  // clang-format off
  const Case cases[] = {
      {"gang scheduling off", kNone, {}, "", ""},
      {"off even with a policy", kNone, {2, "q"}, "", ""},
      {"volcano: minMember is every replica, queue default, minResources {}", kVolcano, {}, "scheduling.volcano.sh/v1beta1", R"({"minMember":3,"minResources":{},"queue":"default"})"},
      {"volcano: minAvailable", kVolcano, {2}, "scheduling.volcano.sh/v1beta1", R"({"minMember":2,"minResources":{},"queue":"default"})"},
      {"volcano: queue", kVolcano, {{}, "research"}, "scheduling.volcano.sh/v1beta1", R"({"minMember":3,"minResources":{},"queue":"research"})"},
      {"volcano: priorityClass", kVolcano, {{}, "", "high"}, "scheduling.volcano.sh/v1beta1", R"({"minMember":3,"minResources":{},"priorityClassName":"high","queue":"default"})"},
      {"volcano: minResources", kVolcano, {{}, "", "", {{"cpu", "4"}, {"memory", "16Gi"}}}, "scheduling.volcano.sh/v1beta1", R"({"minMember":3,"minResources":{"cpu":"4","memory":"16Gi"},"queue":"default"})"},
      {"volcano: no scheduleTimeoutSeconds field", kVolcano, {{}, "", "", {}, 60}, "scheduling.volcano.sh/v1beta1", R"({"minMember":3,"minResources":{},"queue":"default"})"},
      {"volcano: everything", kVolcano, {1, "q", "p", {{"nvidia.com/gpu", "2"}}, 30}, "scheduling.volcano.sh/v1beta1", R"({"minMember":1,"minResources":{"nvidia.com/gpu":"2"},"priorityClassName":"p","queue":"q"})"},
      {"scheduler-plugins: minMember is every replica", kPlugins, {}, "scheduling.x-k8s.io/v1alpha1", R"({"minMember":3})"},
      {"scheduler-plugins: minAvailable", kPlugins, {1}, "scheduling.x-k8s.io/v1alpha1", R"({"minMember":1})"},
      {"scheduler-plugins: scheduleTimeoutSeconds", kPlugins, {{}, "", "", {}, 60}, "scheduling.x-k8s.io/v1alpha1", R"({"minMember":3,"scheduleTimeoutSeconds":60})"},
      {"scheduler-plugins: minResources", kPlugins, {{}, "", "", {{"cpu", "8"}}}, "scheduling.x-k8s.io/v1alpha1", R"({"minMember":3,"minResources":{"cpu":"8"}})"},
      {"scheduler-plugins: no queue or priorityClass", kPlugins, {{}, "q", "p"}, "scheduling.x-k8s.io/v1alpha1", R"({"minMember":3})"},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    model::ReconcileConfig config;
    config.gang_scheduler = c.scheduler;
    const model::Job job = Job(c.policy);
    auto pg = DesiredPodGroup(job, config);
    if (std::string(c.api_version).empty()) {
      EXPECT_FALSE(pg.has_value());
      continue;
    }
    ASSERT_TRUE(pg.has_value());
    EXPECT_EQ(pg->api_version, c.api_version);
    EXPECT_EQ(pg->kind, "PodGroup");
    EXPECT_EQ(pg->name, "g");  // named after the job
    EXPECT_EQ(pg->namespace_, "ns");
    EXPECT_EQ(pg->body["apiVersion"], c.api_version);
    EXPECT_EQ(pg->body["metadata"]["name"], "g");
    EXPECT_EQ(pg->body["metadata"]["ownerReferences"][0]["kind"], "PyTorchJob");
    EXPECT_EQ(pg->body["metadata"]["ownerReferences"][0]["controller"], true);
    EXPECT_EQ(pg->body["spec"], Json::parse(c.spec));
  }
}

TEST(GangTest, PodDecorations) {
  struct Case {
    const char* scenario;
    GangScheduler scheduler;
    const char* plugins_scheduler_name;  // config.scheduler_plugins_scheduler_name
    const char* replica_type;
    const char* template_json;
    const char* want;  // the template afterwards
  };
  // clang-format off
  const Case cases[] = {
      {"off: untouched", kNone, "", "Worker", R"({"spec":{"containers":[]}})", R"({"spec":{"containers":[]}})"},
      {"volcano worker", kVolcano, "", "Worker", R"({"spec":{"containers":[]}})", R"({"metadata":{"annotations":{"scheduling.k8s.io/group-name":"g","volcano.sh/task-spec":"worker"}}, "spec":{"containers":[],"schedulerName":"volcano"}})"},
      {"volcano master", kVolcano, "", "Master", R"({})", R"({"metadata":{"annotations":{"scheduling.k8s.io/group-name":"g","volcano.sh/task-spec":"master"}}, "spec":{"schedulerName":"volcano"}})"},
      {"volcano keeps the user's scheduler", kVolcano, "", "Worker", R"({"spec":{"schedulerName":"mine"}})", R"({"metadata":{"annotations":{"scheduling.k8s.io/group-name":"g","volcano.sh/task-spec":"worker"}}, "spec":{"schedulerName":"mine"}})"},
      {"volcano keeps the user's annotations", kVolcano, "", "Worker", R"({"metadata":{"annotations":{"a":"b"}}})", R"({"metadata":{"annotations":{"a":"b","scheduling.k8s.io/group-name":"g","volcano.sh/task-spec":"worker"}}, "spec":{"schedulerName":"volcano"}})"},
      {"scheduler-plugins", kPlugins, "scheduler-plugins-scheduler", "Worker", R"({})", R"({"metadata":{"labels":{"scheduling.x-k8s.io/pod-group":"g"}}, "spec":{"schedulerName":"scheduler-plugins-scheduler"}})"},
      {"scheduler-plugins, own scheduler name", kPlugins, "sp", "Master", R"({"metadata":{"labels":{"x":"y"}}})", R"({"metadata":{"labels":{"scheduling.x-k8s.io/pod-group":"g","x":"y"}}, "spec":{"schedulerName":"sp"}})"},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    model::ReconcileConfig config;
    config.gang_scheduler = c.scheduler;
    config.scheduler_plugins_scheduler_name = c.plugins_scheduler_name;
    Json tmpl = Json::parse(c.template_json);
    DecorateForGang(Job({}), c.replica_type, config, tmpl);
    EXPECT_EQ(tmpl, Json::parse(c.want)) << tmpl.dump();
  }
}

// Pod template of one container with `resources` (JSON object text, "" for none).
std::string WithResources(const char* resources) {
  Json c = {{"name", "pytorch"}, {"image", "busybox"}};
  if (*resources != 0) c["resources"] = Json::parse(resources);
  return Json({{"spec", {{"containers", Json::array({c})}}}}).dump();
}

TEST(GangTest, MinResourcesFromRequests) {
  struct Case {
    const char* scenario;
    GangScheduler scheduler;
    std::optional<int> min_available;
    const char* master;  // resources of the Master's container
    const char* worker;  // resources of each of the 2 Workers' containers
    const char* want;    // spec.minResources; "": absent
  };
  // clang-format off
  const Case cases[] = {
      {"every pod's requests", kVolcano, {}, R"({"requests":{"cpu":"1","memory":"1Gi"}})", R"({"requests":{"cpu":"500m","memory":"512Mi"}})", R"({"cpu":"2","memory":"2Gi"})"},
      {"scheduler-plugins sums the same", kPlugins, {}, R"({"requests":{"cpu":"1","memory":"1Gi"}})", R"({"requests":{"cpu":"500m","memory":"512Mi"}})", R"({"cpu":"2","memory":"2Gi"})"},
      {"limits when a container has no requests", kVolcano, {}, R"({"limits":{"nvidia.com/gpu":"1"}})", R"({"limits":{"nvidia.com/gpu":"2"}})", R"({"nvidia.com/gpu":"5"})"},
      {"requests hide limits, even a resource only the limits name", kVolcano, {}, R"({"requests":{"cpu":"1"},"limits":{"cpu":"2","nvidia.com/gpu":"1"}})", "", R"({"cpu":"1"})"},
      {"requests: {} hides limits", kVolcano, {}, R"({"requests":{},"limits":{"cpu":"2"}})", "", R"({})"},
      {"requests: null falls back to limits", kVolcano, {}, R"({"requests":null,"limits":{"cpu":"2"}})", "", R"({"cpu":"2"})"},
      {"minAvailable 1: the Master only (kind order; upstream: equal priorities, random order)", kVolcano, 1, R"({"requests":{"cpu":"4"}})", R"({"requests":{"cpu":"1"}})", R"({"cpu":"4"})"},
      {"minAvailable 2: Master and one Worker (kind order)", kVolcano, 2, R"({"requests":{"cpu":"4"}})", R"({"requests":{"cpu":"1"}})", R"({"cpu":"5"})"},
      {"minAvailable 0: nothing", kVolcano, 0, R"({"requests":{"cpu":"4"}})", R"({"requests":{"cpu":"1"}})", R"({})"},
      {"minAvailable above the total: every pod", kVolcano, 9, R"({"requests":{"cpu":"4"}})", R"({"requests":{"cpu":"1"}})", R"({"cpu":"6"})"},
      {"bare numbers", kVolcano, {}, R"({"requests":{"cpu":0.5}})", R"({"requests":{"cpu":2}})", R"({"cpu":"4500m"})"},
      {"the first pod's format is kept", kVolcano, {}, R"({"requests":{"memory":"1G"}})", R"({"requests":{"memory":"1Gi"}})", R"({"memory":"3147483648"})"},
      {"scheduler-plugins: no requests, no field", kPlugins, {}, "", "", ""},
      {"volcano: no requests, {}", kVolcano, {}, "", "", R"({})"},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    JobBuilder b = MakePyTorchJob("ns", "g").Master(1).Workers(2);
    b.Template("Master", WithResources(c.master)).Template("Worker", WithResources(c.worker));
    if (c.min_available) b.MinAvailable(*c.min_available);
    model::ReconcileConfig config;
    config.gang_scheduler = c.scheduler;
    auto pg = DesiredPodGroup(b.Build(), config);
    ASSERT_TRUE(pg.has_value());
    const Json& spec = pg->body["spec"];
    if (std::string(c.want).empty()) {
      EXPECT_FALSE(spec.contains("minResources")) << spec.dump();
    } else {
      EXPECT_EQ(spec["minResources"], Json::parse(c.want)) << spec.dump();
    }
  }
}

TEST(GangTest, GivenMinResourcesWin) {
  JobBuilder b = MakePyTorchJob("ns", "g").Master(1).Workers(2);
  b.Template("Worker", WithResources(R"({"requests":{"cpu":"8"}})")).MinResource("cpu", "1");
  model::ReconcileConfig config;
  config.gang_scheduler = kVolcano;
  auto pg = DesiredPodGroup(b.Build(), config);
  ASSERT_TRUE(pg.has_value());
  EXPECT_EQ(pg->body["spec"]["minResources"], Json::parse(R"({"cpu":"1"})"));
}

}  // namespace
}  // namespace coach::reconcile
