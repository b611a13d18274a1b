#include "operator/reconcile/karpenter_placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/plan_job.h"

namespace coach::reconcile {
namespace {

using testing::MakeMPIJob;
using testing::MakePyTorchJob;
using testing::MakeTFJob;

// The job with one GPU limit on every container of the given replica types (the builder's
// default templates otherwise, ports included).
model::Job WithGpus(model::Job job, std::initializer_list<const char*> types) {
  for (const char* type : types) {
    auto& spec = (*job.mutable_spec()->mutable_replica_specs())[type];
    model::Json tmpl = model::Json::parse(spec.template_json());
    for (model::Json& c : tmpl["spec"]["containers"])
      c["resources"]["limits"]["nvidia.com/gpu"] = 1;
    spec.set_template_json(tmpl.dump());
  }
  return job;
}

model::ReconcileConfig On() {
  model::ReconcileConfig config;
  config.karpenter.enabled = true;
  return config;
}

// Pod name -> the NodePool its nodeSelector names ("" when none).
std::map<std::string, std::string> PoolsOf(const model::Job& job,
                                           const model::ReconcileConfig& config) {
  std::map<std::string, std::string> out;
  absl::StatusOr<std::vector<model::KubeObject>> objects = DesiredObjects(job, config);
  EXPECT_TRUE(objects.ok()) << objects.status();
  if (!objects.ok()) return out;
  for (const model::KubeObject& o : *objects) {
    if (o.kind != "Pod") continue;
    out[o.name] = o.body["spec"]
                      .value("nodeSelector", model::Json::object())
                      .value("karpenter.sh/nodepool", "");
    // Every placed replica is protected from its creation.
    if (!out[o.name].empty()) {
      EXPECT_EQ(o.body["metadata"]["annotations"].value("karpenter.sh/do-not-disrupt", ""), "true")
          << o.name;
    }
  }
  return out;
}

struct Case {
  const char* scenario;
  model::Job job;
  model::ReconcileConfig config;
  std::map<std::string, std::string> pools;
};

TEST(PlaceForKarpenterTest, PoolsPerReplica) {
  const std::string gpu = "gpu-workloads", cpu = "training-workloads";
  const std::vector<Case> cases = {
      {"seed GPU PyTorchJob: every replica on the GPU pool",
       WithGpus(MakePyTorchJob("ns", "seed").Master(1).Workers(2).Build(), {"Master", "Worker"}),
       On(),
       {{"seed-master-0", gpu}, {"seed-worker-0", gpu}, {"seed-worker-1", gpu}}},
      {"CPU-only Master beside GPU Workers",
       WithGpus(MakePyTorchJob("ns", "mix").Master(1).Workers(1).Build(), {"Worker"}),
       On(),
       {{"mix-master-0", cpu}, {"mix-worker-0", gpu}}},
      {"TFJob PS on the CPU pool",
       WithGpus(MakeTFJob("ns", "tf").PS(1).Workers(1).Build(), {"Worker"}),
       On(),
       {{"tf-ps-0", cpu}, {"tf-worker-0", gpu}}},
      {"MPI launcher on the CPU pool",
       WithGpus(MakeMPIJob("ns", "mpi").Launcher(1).Workers(1).Build(), {"Worker"}),
       On(),
       {{"mpi-launcher", cpu}, {"mpi-worker-0", gpu}}},
      {"operator without Karpenter: nothing",
       WithGpus(MakePyTorchJob("ns", "off").Master(1).Build(), {"Master"}),
       model::ReconcileConfig{},
       {{"off-master-0", ""}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    EXPECT_EQ(PoolsOf(c.job, c.config), c.pools);
  }
}

TEST(PlaceForKarpenterTest, ZoneAffinitySelectsTheJobsPods) {
  model::Job job = MakePyTorchJob("ns", "seed").Master(1).Build();
  model::Json pod = model::Json::parse(R"({"spec":{"containers":[{"name":"pytorch"}]}})");
  ASSERT_TRUE(PlaceForKarpenter(job, On(), pod).ok());
  const model::Json& term =
      pod["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
         ["podAffinityTerm"];
  EXPECT_EQ(term["topologyKey"], "topology.kubernetes.io/zone");
  EXPECT_EQ(term["labelSelector"]["matchLabels"]["training.kubeflow.org/job-name"], "seed");
}

TEST(PlaceForKarpenterTest, InvalidAnnotationNamesIt) {
  model::Job job = MakePyTorchJob("ns", "seed").Master(1).Build();
  (*job.mutable_metadata()->mutable_annotations())["coach.dev/zone-policy"] = "strict";
  absl::Status s = ValidateKarpenterAnnotations(job);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("coach.dev/zone-policy"), std::string::npos) << s.message();
  EXPECT_FALSE(DesiredObjects(job, On()).ok());
}

}  // namespace
}  // namespace coach::reconcile
