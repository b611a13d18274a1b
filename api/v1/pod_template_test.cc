#include "api/v1/pod_template.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coach::api::v1 {
namespace {

using nlohmann::json;

constexpr char kPath[] = "spec.pytorchReplicaSpecs.Worker.template";

std::vector<FieldError> Check(const std::string& text) {
  return CheckPodTemplateTypes(json::parse(text), kPath);
}

TEST(PodTemplateTest, AWellTypedTemplatePasses) {
  EXPECT_TRUE(Check(R"({
    "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}},
    "spec": {
      "containers": [{
        "name": "pytorch", "image": "i", "command": ["python"], "args": ["-c", "1"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {}}}],
        "ports": [{"name": "p", "containerPort": 23456, "protocol": "TCP"}],
        "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}},
        "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": true}],
        "livenessProbe": {"httpGet": {"port": "http"}},
        "someFieldOfANewerKubernetes": [1, 2]
      }],
      "initContainers": [{"name": "init", "image": "i"}],
      "volumes": [{"name": "v", "emptyDir": {}}],
      "nodeSelector": {"k": "v"},
      "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}],
      "restartPolicy": "Never",
      "terminationGracePeriodSeconds": 30,
      "hostNetwork": false,
      "affinity": {"nodeAffinity": {}}
    }
  })")
                  .empty());
  // Null is absent, as in Kubernetes.
  EXPECT_TRUE(Check(R"({"metadata": null, "spec": {"containers": [{"ports": null}]}})").empty());
}

// Each case: a template, and the one error it gets.
TEST(PodTemplateTest, EachFieldOfTheWrongTypeIsNamed) {
  const std::string c = std::string(kPath) + ".spec.containers[0]";
  struct Case {
    const char* tmpl;
    FieldError want;
  };
  const std::vector<Case> cases = {
      {R"([1, 2])", {kPath, "must be an object, got a list"}},
      {R"({"spec": "x"})", {std::string(kPath) + ".spec", "must be an object, got string \"x\""}},
      {R"({"spec": {"containers": {"name": "pytorch"}}})",
       {std::string(kPath) + ".spec.containers", "must be a list, got an object"}},
      {R"({"spec": {"containers": ["pytorch"]}})",
       {c, "must be an object, got string \"pytorch\""}},
      {R"({"spec": {"containers": [{"ports": "x"}]}})",
       {c + ".ports", "must be a list, got string \"x\""}},
      {R"({"spec": {"containers": [{"ports": [80]}]}})",
       {c + ".ports[0]", "must be an object, got integer 80"}},
      {R"({"spec": {"containers": [{"ports": [{"containerPort": "80"}]}]}})",
       {c + ".ports[0].containerPort", "must be an integer, got string \"80\""}},
      {R"({"spec": {"containers": [{"ports": [{"name": 5}]}]}})",
       {c + ".ports[0].name", "must be a string, got integer 5"}},
      {R"({"spec": {"containers": [{"env": [{"name": "A", "value": 5}]}]}})",
       {c + ".env[0].value", "must be a string, got integer 5"}},
      {R"({"spec": {"containers": [{"env": {"A": "1"}}]}})",
       {c + ".env", "must be a list, got an object"}},
      {R"({"spec": {"containers": [{"command": "python train.py"}]}})",
       {c + ".command", "must be a list, got string \"python train.py\""}},
      {R"({"spec": {"containers": [{"args": [1]}]}})",
       {c + ".args[0]", "must be a string, got integer 1"}},
      {R"({"spec": {"containers": [{"name": 7}]}})",
       {c + ".name", "must be a string, got integer 7"}},
      {R"({"spec": {"containers": [{"resources": {"limits": {"cpu": [1]}}}]}})",
       {c + ".resources.limits[cpu]",
        "must be a quantity (a string like \"16Gi\" or a number), got a list"}},
      {R"({"spec": {"containers": [{"volumeMounts": [{"readOnly": "yes"}]}]}})",
       {c + ".volumeMounts[0].readOnly", "must be a boolean (true or false), got string \"yes\""}},
      {R"({"spec": {"containers": [{"livenessProbe": 5}]}})",
       {c + ".livenessProbe", "must be an object, got integer 5"}},
      {R"({"spec": {"initContainers": [{"image": 5}]}})",
       {std::string(kPath) + ".spec.initContainers[0].image", "must be a string, got integer 5"}},
      {R"({"spec": {"nodeSelector": {"zone": 1}}})",
       {std::string(kPath) + ".spec.nodeSelector[zone]", "must be a string, got integer 1"}},
      {R"({"spec": {"terminationGracePeriodSeconds": 1.5}})",
       {std::string(kPath) + ".spec.terminationGracePeriodSeconds",
        "must be an integer, got number 1.5"}},
      {R"({"spec": {"tolerations": [{"key": true}]}})",
       {std::string(kPath) + ".spec.tolerations[0].key", "must be a string, got boolean true"}},
      {R"({"metadata": {"labels": {"app": {"x": 1}}}})",
       {std::string(kPath) + ".metadata.labels[app]", "must be a string, got an object"}},
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.tmpl);
    std::vector<FieldError> errors = Check(tc.tmpl);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0], tc.want) << errors[0].path << ": " << errors[0].message;
  }
}

TEST(PodTemplateTest, EveryProblemInDocumentOrder) {
  std::vector<FieldError> errors = Check(R"({"spec": {"containers": [
      {"name": 1, "env": [{"value": 2}]}, {"ports": "x"}]}})");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].path, std::string(kPath) + ".spec.containers[0].name");
  EXPECT_EQ(errors[1].path, std::string(kPath) + ".spec.containers[0].env[0].value");
  EXPECT_EQ(errors[2].path, std::string(kPath) + ".spec.containers[1].ports");
}

// The check walks the schema, not the input: a deep value under a field it does not read, or
// under one that is only an object, costs no recursion.
TEST(PodTemplateTest, DeepValuesAreNotWalked) {
  json tmpl = {{"spec", {{"containers", json::array({{{"name", "c"}}})}}}};
  // Built in place: copying a value this deep would recurse.
  for (json* at : {&tmpl["spec"]["containers"][0]["unknown"], &tmpl["spec"]["affinity"]["x"]}) {
    for (int i = 0; i < 100000; ++i) {
      *at = json::array({nullptr});
      at = &(*at)[0];
    }
  }
  EXPECT_TRUE(CheckPodTemplateTypes(tmpl, kPath).empty());
}

}  // namespace
}  // namespace coach::api::v1
