// A TrainJob that opts in to elastic training (coach.dev/elastic-min-nodes) through the one
// reconciler: its node pods' torchrun env, the annotation refused naming it, and a lost node pod
// absorbed while at least the minimum run, as an elastic PyTorchJob's Workers are.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/v1/codec/job_codec.h"
#include "api/v1/job_conditions.h"
#include "operator/model/address_plan.h"
#include "operator/model/testing/result_text.h"
#include "operator/model/testing/train_job_fixtures.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/elastic.h"
#include "operator/reconcile/reconciler.h"

namespace coach::reconcile {
namespace {

using nlohmann::json;
using testing::ActionsText;
using ::testing::Contains;
using testing::EventReasons;
using ::testing::HasSubstr;
using testing::MakeTrainJob;
using ::testing::Not;
using testing::ObservedPodOf;
using testing::ObservedWithRuntime;
using testing::ReferenceRuntime;

constexpr char kAnnotation[] = "coach.dev/elastic-min-nodes";
const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// A TrainJob on `runtime` with `nodes` nodes, annotated with `min_nodes` unless it is empty.
model::Job TrainJob(const std::string& runtime, int nodes, const std::string& min_nodes,
                    const json& env = json::array()) {
  return MakeTrainJob(runtime, nodes,
                      min_nodes.empty() ? json::object() : json{{kAnnotation, min_nodes}}, env);
}

std::vector<model::KubeObject> CreatedPods(const model::ReconcileResult& r) {
  std::vector<model::KubeObject> pods;
  for (const model::Action& a : r.actions) {
    if (a.type == model::Action::Type::kCreate && a.object.kind == "Pod") pods.push_back(a.object);
  }
  return pods;
}

// The first container's env, name -> value ("" for a valueFrom).
std::map<std::string, std::string> Env(const model::KubeObject& pod) {
  std::map<std::string, std::string> env;
  for (const json& e : pod.body["spec"]["containers"][0]["env"])
    env[e["name"]] = e.value("value", "");
  return env;
}

// The message of the job's Failed condition after one pass ("" when it did not fail).
std::string FailureOf(const model::Job& job, const json& runtime) {
  model::ReconcileResult r = Reconcile(job, ObservedWithRuntime(runtime), kNow, {});
  for (const api::v1::JobCondition& c : r.status.conditions()) {
    if (c.type() == api::v1::kJobFailed) {
      EXPECT_TRUE(CreatedPods(r).empty());
      EXPECT_EQ(c.reason(), api::v1::kJobFailedValidationReason);
      return c.message();
    }
  }
  return "";
}

TEST(TrainJobElasticTest, NodePodsRunAnElasticTorchrunWithARendezvousOnNodeZero) {
  model::ReconcileResult r =
      Reconcile(TrainJob("torch-distributed", 3, "2"),
                ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, {});
  const std::vector<model::KubeObject> pods = CreatedPods(r);
  ASSERT_EQ(pods.size(), 3u) << ::testing::PrintToString(ActionsText(r));
  for (const model::KubeObject& pod : pods) {
    const std::map<std::string, std::string> env = Env(pod);
    EXPECT_EQ(env.at("PET_NNODES"), "2:3") << pod.name;
    EXPECT_EQ(env.at("PET_RDZV_BACKEND"), "c10d");
    EXPECT_EQ(env.at("PET_RDZV_ENDPOINT"), "mnist-node-0-0.mnist:29500");
    EXPECT_EQ(env.at("PET_RDZV_ID"), "uid-1");
    EXPECT_EQ(env.at("PET_MAX_RESTARTS"), "3");
    EXPECT_EQ(env.at("TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "1");
    EXPECT_EQ(env.at("PET_NPROC_PER_NODE"), "1");
    // The rendezvous replaces the fixed master; on Kubernetes node 0's name alone makes it the
    // store's host.
    EXPECT_EQ(env.count("PET_MASTER_ADDR"), 0u);
    EXPECT_EQ(env.count("PET_MASTER_PORT"), 0u);
    // A lost node leaves the rendezvous after 3 s of missed heartbeats, not torch's 15 s.
    EXPECT_EQ(env.at("PET_RDZV_CONF"), "keep_alive_interval=1");
    int nnodes = 0;
    for (const json& e : pod.body["spec"]["containers"][0]["env"])
      nnodes += e["name"] == "PET_NNODES";
    EXPECT_EQ(nnodes, 1) << pod.body["spec"]["containers"][0]["env"].dump();
  }
}

TEST(TrainJobElasticTest, TheTrainersOwnSettingsStand) {
  const json env = json::parse(R"([{"name": "PET_MAX_RESTARTS", "value": "7"},
                                   {"name": "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "value": "0"}])");
  model::ReconcileResult r =
      Reconcile(TrainJob("torch-distributed", 2, "1", env),
                ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, {});
  const std::vector<model::KubeObject> pods = CreatedPods(r);
  ASSERT_EQ(pods.size(), 2u) << ::testing::PrintToString(ActionsText(r));
  const std::map<std::string, std::string> e = Env(pods[1]);
  EXPECT_EQ(e.at("PET_MAX_RESTARTS"), "7");
  EXPECT_EQ(e.at("TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "0");
  EXPECT_EQ(e.at("PET_NNODES"), "1:2");
}

TEST(TrainJobElasticTest, WithoutTheAnnotationTheEnvIsUpstreams) {
  model::ReconcileResult r =
      Reconcile(TrainJob("torch-distributed", 3, ""),
                ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, {});
  const std::vector<model::KubeObject> pods = CreatedPods(r);
  ASSERT_EQ(pods.size(), 3u);
  const std::map<std::string, std::string> env = Env(pods[1]);
  EXPECT_EQ(env.at("PET_NNODES"), "3");
  EXPECT_EQ(env.at("PET_MASTER_ADDR"), "mnist-node-0-0.mnist");
  EXPECT_EQ(env.count("PET_RDZV_ENDPOINT"), 0u);
  EXPECT_EQ(env.count("TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), 0u);
}

// Every pod on one host (the local backend's plan).
class SharedHostPlan : public model::AddressPlan {
 public:
  std::string Host(const api::v1::TrainingJob&, std::string_view, int) const override {
    return "127.0.0.1";
  }
  std::string QualifiedHost(const api::v1::TrainingJob&, std::string_view, int) const override {
    return "127.0.0.1";
  }
  int Port(const api::v1::TrainingJob&, std::string_view, int, std::string_view,
           int) const override {
    return 41234;
  }
  bool SharedHost() const override { return true; }
};

TEST(TrainJobElasticTest, OnASharedHostNodeZeroHoldsTheRendezvousStore) {
  model::ReconcileConfig config;
  config.address_plan = std::make_shared<SharedHostPlan>();
  model::ReconcileResult r =
      Reconcile(TrainJob("torch-distributed", 3, "2"),
                ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml")), kNow, config);
  const std::vector<model::KubeObject> pods = CreatedPods(r);
  ASSERT_EQ(pods.size(), 3u) << ::testing::PrintToString(ActionsText(r));
  for (size_t i = 0; i < pods.size(); ++i) {
    const std::map<std::string, std::string> env = Env(pods[i]);
    EXPECT_EQ(env.at("PET_RDZV_ENDPOINT"), "127.0.0.1:41234");
    EXPECT_EQ(env.at("PET_RDZV_CONF"),
              i == 0 ? "keep_alive_interval=1,is_host=true" : "keep_alive_interval=1,is_host=false")
        << pods[i].name;
  }
}

TEST(TrainJobElasticTest, AnAnnotationTheJobCannotHaveFailsItNamingTheAnnotation) {
  const json torch = ReferenceRuntime("torch_distributed.yaml");
  const std::string range = "must be an integer N with 1 <= N < numNodes (numNodes is 3)";
  for (const char* bad : {"3", "0", "4", "two", "-1", "+2", " 2"}) {
    const std::string message = FailureOf(TrainJob("torch-distributed", 3, bad), torch);
    EXPECT_THAT(message, HasSubstr("metadata.annotations[coach.dev/elastic-min-nodes]: Invalid "
                                   "value: \"" +
                                   std::string(bad) + "\""))
        << bad;
    EXPECT_THAT(message, HasSubstr(range)) << bad;
  }
  EXPECT_THAT(FailureOf(TrainJob("torch-distributed", 1, "1"), torch),
              HasSubstr("(numNodes is 1)"));
  EXPECT_THAT(
      FailureOf(TrainJob("jax-distributed", 3, "2"), ReferenceRuntime("jax_distributed.yaml")),
      HasSubstr("metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: \"2\": "
                "elastic training is torchrun's: the runtime needs mlPolicy.torch"));
  EXPECT_EQ(FailureOf(TrainJob("torch-distributed", 3, "2"), torch), "")
      << "a valid annotation fails nothing";
}

// Three node pods, 2:3: after they all ran, `lost` of them fail (killed: exit code 137).
struct LossPass {
  model::Job job;
  model::ReconcileResult result;
  std::string lost_pod;
};
LossPass LoseNodes(const std::string& min_nodes, int lost) {
  const model::Job job = TrainJob("torch-distributed", 3, min_nodes);
  model::ObservedState observed = ObservedWithRuntime(ReferenceRuntime("torch_distributed.yaml"));
  model::ReconcileResult first = Reconcile(job, observed, kNow, {});
  const std::vector<model::KubeObject> pods = CreatedPods(first);
  EXPECT_EQ(pods.size(), 3u);
  model::Job running = job;
  *running.mutable_status() = first.status;
  observed.runtime_from_snapshot = true;
  observed.objects = {{"Service", "mnist"}, {"ConfigMap", "mnist-runtime-snapshot"}};
  for (const model::KubeObject& pod : pods) {
    observed.pods.push_back(ObservedPodOf(pod, model::PodPhase::kRunning));
  }
  model::ReconcileResult all = Reconcile(running, observed, kNow + absl::Seconds(5), {});
  *running.mutable_status() = all.status;
  for (int i = 1; i <= lost; ++i) {
    observed.pods[i].phase = model::PodPhase::kFailed;
    observed.pods[i].exit_code = 137;
  }
  return {running, Reconcile(running, observed, kNow + absl::Seconds(10), {}),
          observed.pods[1].name};
}

TEST(TrainJobElasticTest, ALostNodePodIsRecreatedWhileTheOthersTrainOn) {
  const LossPass pass = LoseNodes("2", 1);
  const model::ReconcileResult& r = pass.result;
  // Recreated as OnFailure says, and no restart of the job.
  EXPECT_THAT(ActionsText(r), Contains("delete Pod/" + pass.lost_pod));
  EXPECT_FALSE(HasTrueCondition(r.status, api::v1::kJobRestarting)) << r.status.ShortDebugString();
  EXPECT_TRUE(HasTrueCondition(r.status, api::v1::kJobRunning)) << r.status.ShortDebugString();
  EXPECT_THAT(EventReasons(r), Contains(kElasticShrinkReason));
  EXPECT_THAT(EventReasons(r), Not(Contains(::testing::HasSubstr("Restarting"))));
  const api::v1::ElasticStatus& elastic = r.status.coach().elastic();
  EXPECT_EQ(elastic.min_workers(), 2);
  EXPECT_EQ(elastic.max_workers(), 3);
  EXPECT_EQ(elastic.workers(), 2);
  ASSERT_EQ(elastic.changes_size(), 2) << elastic.ShortDebugString();
  EXPECT_EQ(elastic.changes(0).why(), "all 3 nodes run");
  EXPECT_EQ(elastic.changes(1).why(), "node replica 1 exited with code 137");
  for (const auto& e : r.events) {
    if (e.reason != kElasticShrinkReason) continue;
    EXPECT_EQ(e.type, "Normal");
    EXPECT_THAT(e.message, HasSubstr("training goes on with 2 of 3 nodes "
                                     "(coach.dev/elastic-min-nodes 2:3)"));
  }
  // What upstream readers see of the job is still a running TrainJob.
  model::Job shown_job = pass.job;
  *shown_job.mutable_status() = r.status;
  const json shown = api::v1::codec::JobToJson(shown_job);
  EXPECT_FALSE(shown["status"].contains("conditions")) << shown["status"].dump();
  EXPECT_EQ(shown["status"]["coach"]["elastic"]["workers"], 2) << shown["status"].dump();
}

TEST(TrainJobElasticTest, BelowTheMinimumOrWithoutTheAnnotationTheJobRestarts) {
  for (const auto& [min_nodes, lost] :
       std::vector<std::pair<std::string, int>>{{"2", 2}, {"", 1}}) {
    const model::ReconcileResult r = LoseNodes(min_nodes, lost).result;
    EXPECT_TRUE(HasTrueCondition(r.status, api::v1::kJobRestarting))
        << "min " << min_nodes << ", lost " << lost << ": " << r.status.ShortDebugString();
  }
}

TEST(TrainJobElasticTest, TheRangeIsTheAnnotationToTheNodePods) {
  const model::Job job = TrainJob("torch-distributed", 3, "2");
  // The stored TrainJob has no replica types: only its plan's expansion has a range.
  EXPECT_FALSE(ElasticWorkers(job));
  model::Job expanded = job;
  (*expanded.mutable_spec()->mutable_replica_specs())["node"].set_replicas(3);
  std::optional<ElasticRange> range = ElasticWorkers(expanded);
  ASSERT_TRUE(range);
  EXPECT_EQ(range->min, 2);
  EXPECT_EQ(range->max, 3);
  EXPECT_EQ(range->type, "node");
  expanded.mutable_metadata()->mutable_annotations()->erase(kAnnotation);
  EXPECT_FALSE(ElasticWorkers(expanded));
}

}  // namespace
}  // namespace coach::reconcile
