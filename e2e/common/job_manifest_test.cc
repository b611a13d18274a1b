#include "e2e/common/job_manifest.h"

#include "api/v1/codec/yaml_json.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e {
namespace {

using nlohmann::json;

json Parsed(const std::string& yaml) {
  absl::StatusOr<json> parsed = api::v1::codec::ParseYaml(yaml);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << yaml;
  return parsed.ok() ? *parsed : json();
}

// What the e2e suites pasted by hand before: the builder's YAML reads back as the same object.
TEST(JobManifestTest, WritesWhatAHandWrittenManifestSays) {
  const JobManifest job = JobManifest::PyTorch("mnist")
                              .Replicas({{"Master", 1}, {"Worker", 2}})
                              .RestartPolicy("Never")
                              .Replica("Worker", 2)
                              .KwokExit(0, 3)
                              .BackoffLimit(2)
                              .CleanPodPolicy("All");
  EXPECT_EQ(Parsed(job.Yaml()), Parsed(R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: mnist
spec:
  runPolicy: {backoffLimit: 2, cleanPodPolicy: All}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers: [{name: pytorch, image: coach.local/none}]
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        metadata:
          annotations: {coach.test/exit-code: "0", coach.test/run-seconds: "3"}
        spec:
          containers: [{name: pytorch, image: coach.local/none}]
)"));
  EXPECT_EQ(Parsed(job.Yaml()), job.Json());
}

TEST(JobManifestTest, OnlyWhatIsSetIsWritten) {
  const json job = JobManifest::PyTorch("plain").Replica("Master", 1).Json();
  EXPECT_FALSE(job["spec"].contains("runPolicy")) << job.dump();
  EXPECT_FALSE(job["metadata"].contains("namespace")) << job.dump();
  const json& master = job["spec"]["pytorchReplicaSpecs"]["Master"];
  EXPECT_FALSE(master.contains("restartPolicy")) << master.dump();
  EXPECT_FALSE(master["template"].contains("metadata")) << master.dump();
}

TEST(JobManifestTest, TheKindNamesTheSpecsAndTheContainer) {
  const json job = JobManifest(api::v1::TF_JOB, "tf").Replica("PS", 1).Json();
  EXPECT_EQ(job["kind"], "TFJob");
  EXPECT_EQ(job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["name"],
            "tensorflow");
}

TEST(JobManifestTest, SettersChangeTheLatestTypesOnly) {
  const json specs = JobManifest::PyTorch("j")
                         .Replica("Master", 1)
                         .Command({"/bin/sh", "-c", "true"})
                         .Env("A", "1")
                         .Replica("Worker", 3)
                         .Image("")
                         .ContainerName("main")
                         .Port("p", 1234)
                         .PodLabel("e2e", "1")
                         .Json()["spec"]["pytorchReplicaSpecs"];
  const json& master = specs["Master"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(master, json::parse(R"({"name": "pytorch", "image": "coach.local/none",
      "command": ["/bin/sh", "-c", "true"], "env": [{"name": "A", "value": "1"}]})"));
  EXPECT_FALSE(specs["Master"]["template"].contains("metadata"));
  const json& worker = specs["Worker"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(worker,
            json::parse(R"({"name": "main", "ports": [{"name": "p", "containerPort": 1234}]})"));
  EXPECT_EQ(specs["Worker"]["template"]["metadata"]["labels"]["e2e"], "1");
}

// A test of refusals needs the invalid job written as given.
TEST(JobManifestTest, NothingIsChecked) {
  const json job = JobManifest::PyTorch("Bad_Name").Replica("Chief", -3).Json();
  EXPECT_EQ(job["metadata"]["name"], "Bad_Name");
  EXPECT_EQ(job["spec"]["pytorchReplicaSpecs"]["Chief"]["replicas"], -3);
}

}  // namespace
}  // namespace coach::e2e
