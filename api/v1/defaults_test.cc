#include "api/v1/defaults.h"

#include <gtest/gtest.h>

#include <string>

#include "api/v1/codec/job_codec.h"
#include "google/protobuf/util/message_differencer.h"

namespace coach::api::v1 {
namespace {

using nlohmann::json;

TrainingJob Parse(const std::string& text) {
  auto jobs = codec::ParseManifests(text);
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  return jobs.ok() ? jobs->front() : TrainingJob();
}

json Ports(const TrainingJob& job, const std::string& type, int container = 0) {
  json tmpl = json::parse(job.spec().replica_specs().at(type).template_json());
  return tmpl["spec"]["containers"][container].value("ports", json());
}

void ExpectIdempotent(const TrainingJob& defaulted) {
  TrainingJob again = defaulted;
  SetDefaults(&again);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again, defaulted))
      << again.DebugString() << "\nvs\n"
      << defaulted.DebugString();
}

TEST(DefaultsTest, PyTorchJob) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p}
spec:
  pytorchReplicaSpecs:
    master:
      template: {spec: {containers: [{name: sidecar, image: s}, {name: pytorch, image: i}]}}
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: other, image: i}]}}
)");
  SetDefaults(&job);
  EXPECT_EQ(job.metadata().namespace_(), "default");
  EXPECT_EQ(job.spec().run_policy().clean_pod_policy(), "None");
  const auto& specs = job.spec().replica_specs();
  ASSERT_EQ(specs.count("Master"), 1u);
  EXPECT_EQ(specs.count("master"), 0u);
  EXPECT_EQ(specs.at("Master").replicas(), 1);
  EXPECT_EQ(specs.at("Master").restart_policy(), "OnFailure");
  EXPECT_EQ(specs.at("Worker").replicas(), 3);
  // The port goes to the container named pytorch, else container 0.
  EXPECT_TRUE(Ports(job, "Master", 0).is_null());
  EXPECT_EQ(Ports(job, "Master", 1),
            json::parse(R"([{"name": "pytorchjob-port", "containerPort": 23456}])"));
  EXPECT_EQ(Ports(job, "Worker", 0),
            json::parse(R"([{"name": "pytorchjob-port", "containerPort": 23456}])"));
  EXPECT_EQ(job.spec().nproc_per_node(), "auto");
  EXPECT_FALSE(job.spec().has_elastic_policy());
  ExpectIdempotent(job);
}

TEST(DefaultsTest, PyTorchElasticPolicy) {
  const std::string base = R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p, namespace: ns}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: pytorch, image: i, ports: [{name: pytorchjob-port, containerPort: 1234}]}]}}
)";
  TrainingJob none = Parse(base + "  elasticPolicy: {}\n");
  SetDefaults(&none);
  EXPECT_EQ(none.metadata().namespace_(), "ns");
  EXPECT_EQ(none.spec().elastic_policy().min_replicas(), 3);
  EXPECT_EQ(none.spec().elastic_policy().max_replicas(), 3);
  EXPECT_EQ(Ports(none, "Worker").size(), 1u);  // existing port of that name kept
  EXPECT_EQ(Ports(none, "Worker")[0]["containerPort"], 1234);
  ExpectIdempotent(none);

  TrainingJob max_only = Parse(base + "  elasticPolicy: {maxReplicas: 5}\n");
  SetDefaults(&max_only);
  EXPECT_EQ(max_only.spec().elastic_policy().min_replicas(), 5);
  TrainingJob min_only = Parse(base + "  elasticPolicy: {minReplicas: 2}\n");
  SetDefaults(&min_only);
  EXPECT_EQ(min_only.spec().elastic_policy().max_replicas(), 2);

  TrainingJob deprecated = Parse(base + "  elasticPolicy: {nProcPerNode: 4}\n");
  SetDefaults(&deprecated);
  EXPECT_FALSE(deprecated.spec().has_nproc_per_node());
  TrainingJob explicit_nproc = Parse(base + "  nprocPerNode: gpu\n");
  SetDefaults(&explicit_nproc);
  EXPECT_EQ(explicit_nproc.spec().nproc_per_node(), "gpu");
}

TEST(DefaultsTest, TFJob) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: t}
spec:
  runPolicy: {cleanPodPolicy: All}
  tfReplicaSpecs:
    ps: {template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    Worker: {replicas: 2, restartPolicy: OnFailure, template: {spec: {containers: [{name: tensorflow, image: i}]}}}
)");
  SetDefaults(&job);
  EXPECT_EQ(job.spec().run_policy().clean_pod_policy(), "All");
  EXPECT_TRUE(job.spec().has_success_policy());
  EXPECT_EQ(job.spec().success_policy(), "");
  EXPECT_EQ(job.spec().replica_specs().at("PS").replicas(), 1);
  EXPECT_EQ(job.spec().replica_specs().at("PS").restart_policy(), "Never");
  EXPECT_EQ(job.spec().replica_specs().at("Worker").restart_policy(), "OnFailure");
  EXPECT_EQ(Ports(job, "PS"), json::parse(R"([{"name": "tfjob-port", "containerPort": 2222}])"));
  ExpectIdempotent(job);
}

TEST(DefaultsTest, XGBoostJob) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: x}
spec:
  xgbReplicaSpecs:
    Master: {template: {spec: {containers: [{name: xgboost, image: i}]}}}
)");
  SetDefaults(&job);
  EXPECT_EQ(job.spec().replica_specs().at("Master").replicas(), 1);
  EXPECT_EQ(job.spec().replica_specs().at("Master").restart_policy(), "Never");
  EXPECT_EQ(Ports(job, "Master"),
            json::parse(R"([{"name": "xgboostjob-port", "containerPort": 9999}])"));
  EXPECT_EQ(job.spec().run_policy().clean_pod_policy(), "None");
  ExpectIdempotent(job);
}

TEST(DefaultsTest, MPIJob) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: m}
spec:
  mpiReplicaSpecs:
    launcher: {template: {spec: {containers: [{name: mpi, image: i}]}}}
    Worker: {template: {spec: {containers: [{name: mpi, image: i}]}}}
)");
  SetDefaults(&job);
  EXPECT_EQ(job.spec().replica_specs().at("Launcher").replicas(), 1);
  EXPECT_EQ(job.spec().replica_specs().at("Worker").replicas(), 0);
  EXPECT_EQ(job.spec().replica_specs().at("Worker").restart_policy(), "Never");
  EXPECT_EQ(job.spec().mpi_clean_pod_policy(), "None");
  EXPECT_EQ(job.spec().run_policy().clean_pod_policy(), "None");
  EXPECT_TRUE(Ports(job, "Launcher").is_null());  // MPI gets no default port
  EXPECT_FALSE(job.spec().has_slots_per_worker());
  ExpectIdempotent(job);

  TrainingJob legacy = Parse(R"(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: m}
spec:
  cleanPodPolicy: Running
  mpiReplicaSpecs: {Launcher: {}}
)");
  SetDefaults(&legacy);
  EXPECT_EQ(legacy.spec().mpi_clean_pod_policy(), "Running");
  EXPECT_FALSE(legacy.spec().run_policy().has_clean_pod_policy());
}

TEST(DefaultsTest, PaddleJob) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: pd}
spec:
  elasticPolicy: {maxRestarts: 1}
  paddleReplicaSpecs:
    Worker: {replicas: 4, template: {spec: {containers: [{name: paddle, image: i, ports: [{name: other, containerPort: 1}]}]}}}
)");
  SetDefaults(&job);
  EXPECT_EQ(job.spec().replica_specs().at("Worker").restart_policy(), "OnFailure");
  EXPECT_EQ(Ports(job, "Worker"), json::parse(R"([{"name": "other", "containerPort": 1},
                                                   {"name": "master", "containerPort": 36543}])"));
  EXPECT_EQ(job.spec().elastic_policy().min_replicas(), 4);
  EXPECT_EQ(job.spec().elastic_policy().max_replicas(), 4);
  EXPECT_FALSE(job.spec().has_nproc_per_node());
  ExpectIdempotent(job);
}

TEST(DefaultsTest, JAXJob) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: j}
spec:
  jaxReplicaSpecs:
    WORKER: {template: {spec: {containers: []}}}
)");
  SetDefaults(&job);
  const ReplicaSpec& worker = job.spec().replica_specs().at("Worker");
  EXPECT_EQ(worker.replicas(), 1);
  EXPECT_EQ(worker.restart_policy(), "Never");
  // No containers: nothing to add the port to, and no crash.
  EXPECT_EQ(json::parse(worker.template_json()), json::parse(R"({"spec": {"containers": []}})"));
  ExpectIdempotent(job);
}

TEST(DefaultsTest, DefaultedJobStillRoundTrips) {
  TrainingJob job = Parse(R"(
apiVersion: kubeflow.org/v1
kind: JAXJob
metadata: {name: j}
spec:
  jaxReplicaSpecs:
    Worker: {template: {spec: {containers: [{name: jax, image: i}]}}}
)");
  SetDefaults(&job);
  auto again = codec::ParseManifests(codec::JobToYamlString(job));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(again->front(), job));
}

}  // namespace
}  // namespace coach::api::v1
