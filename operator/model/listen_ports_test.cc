#include "operator/model/listen_ports.h"

#include <gtest/gtest.h>

#include "operator/model/testing/job_builder.h"

namespace coach::model {
namespace {

using reconcile::testing::JobBuilder;
using Ports = std::map<std::string, std::vector<std::string>>;

TEST(ListenPortsByPod, EveryV1ReplicaGetsTheKindsWiringPortAndWhatItsContainerNames) {
  const Job job = reconcile::testing::MakePyTorchJob("ns", "j")
                      .Master(1)
                      .Workers(2)
                      .Template("Worker", R"({"spec": {"containers": [
                          {"name": "sidecar", "ports": [{"name": "ignored", "containerPort": 1}]},
                          {"name": "pytorch", "ports": [{"name": "metrics", "containerPort": 9},
                                                        {"containerPort": 10}]}]}})")
                      .Build();
  EXPECT_EQ(ListenPortsByPod(job), (Ports{{"j-master-0", {"pytorchjob-port"}},
                                          {"j-worker-0", {"metrics", "pytorchjob-port"}},
                                          {"j-worker-1", {"metrics", "pytorchjob-port"}}}));
}

TEST(ListenPortsByPod, AnUnparseableTemplateKeepsTheWiringPort) {
  const Job job =
      reconcile::testing::MakeTFJob("ns", "t").Workers(1).Template("Worker", "not json").Build();
  EXPECT_EQ(ListenPortsByPod(job), (Ports{{"t-worker-0", {"tfjob-port"}}}));
}

TEST(ListenPortsByPod, ATrainJobListensOnTheTrainersFirstPodOnly) {
  Job job;
  job.set_kind(api::v1::TRAIN_JOB);
  job.mutable_metadata()->set_name("tj");
  job.mutable_metadata()->set_namespace_("ns");
  const Ports ports = ListenPortsByPod(job);
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports.begin()->second, std::vector<std::string>{kTrainerPortName});
}

TEST(ListenPortsByPod, AJobOfNoKindListensOnNothing) {
  EXPECT_TRUE(ListenPortsByPod(Job()).empty());
}

}  // namespace
}  // namespace coach::model
