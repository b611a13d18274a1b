#include "operator/model/testing/train_job_fixtures.h"

#include <gtest/gtest.h>

#include "absl/status/statusor.h"
#include "api/v1/codec/job_codec.h"
#include "operator/trainer/reference_data.h"

namespace coach::reconcile::testing {

using nlohmann::json;

json ReferenceRuntime(const std::string& file) {
  absl::StatusOr<json> runtime =
      trainer::testing::LoadReferenceKind("runtimes/" + file, "ClusterTrainingRuntime");
  EXPECT_TRUE(runtime.ok()) << runtime.status();
  return runtime.ok() ? *runtime : json();
}

model::Job MakeTrainJob(const std::string& runtime, int nodes, const json& annotations,
                        const json& env) {
  json doc = {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
              {"kind", "TrainJob"},
              {"metadata", {{"name", "mnist"}, {"namespace", "ns"}, {"uid", "uid-1"}}},
              {"spec",
               {{"runtimeRef",
                 {{"name", runtime},
                  {"kind", "ClusterTrainingRuntime"},
                  {"apiGroup", "trainer.kubeflow.org"}}},
                {"trainer", {{"numNodes", nodes}, {"command", {"torchrun", "train.py"}}}},
                {"suspend", false},
                {"managedBy", "trainer.kubeflow.org/trainjob-controller"}}}};
  if (!annotations.empty()) doc["metadata"]["annotations"] = annotations;
  if (!env.empty()) doc["spec"]["trainer"]["env"] = env;
  absl::StatusOr<model::Job> job = api::v1::codec::JobFromJson(doc);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : model::Job();
}

model::ObservedState ObservedWithRuntime(const json& runtime) {
  model::ObservedState o;
  o.train_job_runtime = runtime.dump();
  return o;
}

model::ObservedPod ObservedPodOf(const model::KubeObject& created, model::PodPhase phase) {
  model::ObservedPod p;
  p.name = created.name;
  p.replica_type = created.body["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"];
  p.index = std::stoi(created.body["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
                          .get<std::string>());
  p.phase = phase;
  return p;
}

}  // namespace coach::reconcile::testing
