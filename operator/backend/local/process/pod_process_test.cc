#include "operator/backend/local/process/pod_process.h"

#include <gtest/gtest.h>

#include "api/v1/kinds.h"
#include "operator/backend/local/process/kube_expansion.h"

namespace coach::backend::local {
namespace {

using model::Json;

const api::v1::KindInfo& PyTorch() { return *api::v1::FindKind(api::v1::PYTORCH_JOB); }
const api::v1::KindInfo& Mpi() { return *api::v1::FindKind(api::v1::MPI_JOB); }

PodHost Host() {
  PodHost h;
  h.node_name = "node1";
  h.base_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/op"}, {"SECRET", "no"}};
  return h;
}

Json Pod(const std::string& containers) {
  return Json::parse(R"J({"metadata":{"name":"j-worker-0","namespace":"ns",
      "labels":{"app":"x"},"annotations":{"a":"b"}},"spec":{"containers":)J" +
                     containers + "}}");
}

VarLookup Map(std::map<std::string, std::string> m) {
  return [m](const std::string& n) -> std::optional<std::string> {
    auto it = m.find(n);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

TEST(KubeExpansionTest, MatchesKubeletCornerCases) {
  auto m = Map({{"A", "1"}, {"B", "two"}});
  EXPECT_EQ(ExpandKubeVars("$(A)-$(B)", m, 1000).value(), "1-two");
  EXPECT_EQ(ExpandKubeVars("$(C)", m, 1000).value(), "$(C)");
  EXPECT_EQ(ExpandKubeVars("$$(A)", m, 1000).value(), "$(A)");
  EXPECT_EQ(ExpandKubeVars("$$$(A)", m, 1000).value(), "$1");
  EXPECT_EQ(ExpandKubeVars("a$", m, 1000).value(), "a$");
  EXPECT_EQ(ExpandKubeVars("$x$(A", m, 1000).value(), "$x$(A");
  EXPECT_EQ(ExpandKubeVars("${A} $A", m, 1000).value(), "${A} $A");
  EXPECT_EQ(ExpandKubeVars("", m, 1000).value(), "");
  EXPECT_EQ(ExpandKubeVars("$()", m, 1000).value(), "$()");
}

TEST(PodProcessTest, EnvAndArgvAsKubernetesBuildsThem) {
  Json pod = Pod(R"J([{"name":"sidecar","command":["x"]},
      {"name":"pytorch","command":["python","$(SCRIPT)"],"args":["--rank=$(RANK)","$$(RANK)"],
       "workingDir":"/tmp",
       "env":[{"name":"RANK","value":"3"},
              {"name":"SCRIPT","value":"train-$(RANK).py"},
              {"name":"LATER","value":"$(NEXT)"},
              {"name":"NEXT","value":"n"},
              {"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
              {"name":"NS","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},
              {"name":"IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},
              {"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}},
              {"name":"APP","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['app']"}}},
              {"name":"OPT","valueFrom":{"configMapKeyRef":{"name":"c","key":"k","optional":true}}},
              {"name":"RANK","value":"4"},
              {"name":"PATH","value":"/opt/bin"}]}])J");
  auto p = PodToProcess(pod, PyTorch(), Host());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->container, "pytorch");
  EXPECT_EQ(p->ignored_containers, std::vector<std::string>{"sidecar"});
  EXPECT_EQ(p->argv, (std::vector<std::string>{"python", "train-3.py", "--rank=4", "$(RANK)"}));
  EXPECT_EQ(p->working_dir, "/tmp");
  std::vector<std::pair<std::string, std::string>> want = {
      {"RANK", "4"},        {"SCRIPT", "train-3.py"},   {"LATER", "$(NEXT)"},
      {"NEXT", "n"},        {"POD", "j-worker-0"},      {"NS", "ns"},
      {"IP", "127.0.0.1"},  {"NODE", "node1"},          {"APP", "x"},
      {"PATH", "/opt/bin"}, {"HOSTNAME", "j-worker-0"}, {"HOME", "/home/op"}};
  EXPECT_EQ(p->env, want);
  EXPECT_EQ(p->gpus, 0);
}

TEST(KubeExpansionTest, StopsAtTheBoundBeforeBuildingTheString) {
  auto m = Map({{"A", std::string(100, 'a')}});
  EXPECT_EQ(ExpandKubeVars("$(A)$(A)", m, 200).value().size(), 200u);
  EXPECT_FALSE(ExpandKubeVars("$(A)$(A)x", m, 200).has_value());
  EXPECT_FALSE(ExpandKubeVars(std::string(201, 'b'), m, 200).has_value());
}

// Seven variables, each ten references to the one before, over a 100-byte V0: a 1 KB manifest
// asking for 1 GB. Refused, naming the variable, without building it.
TEST(PodProcessTest, EnvExpansionBombIsRefusedNamingTheVariable) {
  Json env = Json::array({{{"name", "V0"}, {"value", std::string(100, 'x')}}});
  for (int i = 1; i < 8; ++i) {
    std::string value;
    for (int j = 0; j < 10; ++j) value += "$(V" + std::to_string(i - 1) + ")";
    env.push_back({{"name", "V" + std::to_string(i)}, {"value", value}});
  }
  Json container = {{"name", "pytorch"}, {"command", {"x"}}, {"env", env}};
  auto p = PodToProcess(Pod(Json::array({container}).dump()), PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("env V4: the value (after $(VAR) expansion) is longer than "
                                      "131072 bytes"),
            std::string::npos)
      << p.status();

  // The same through args.
  container = {{"name", "pytorch"},
               {"command", {"x"}},
               {"args", {"$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)$(V3)"}},
               {"env", Json(env.begin(), env.begin() + 4)}};
  p = PodToProcess(Pod(Json::array({container}).dump()), PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("args[1]: longer than 131072 bytes"), std::string::npos)
      << p.status();
}

TEST(PodProcessTest, MoreThanExecveTakesIsRefused) {
  // One value over what one variable may hold (a 1.4 MB value would never start).
  Json container = {{"name", "pytorch"},
                    {"command", {"x"}},
                    {"env", {{{"name", "BIG"}, {"value", std::string(1400000, 'x')}}}}};
  auto p = PodToProcess(Pod(Json::array({container}).dump()), PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("env BIG"), std::string::npos) << p.status();
  // Many values each within the bound, over the total.
  Json env = Json::array();
  for (int i = 0; i < 20; ++i) {
    env.push_back({{"name", "V" + std::to_string(i)}, {"value", std::string(120000, 'v')}});
  }
  container["env"] = env;
  p = PodToProcess(Pod(Json::array({container}).dump()), PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("more than the 2097152 a process may start with"),
            std::string::npos)
      << p.status();
  // Just within both: starts.
  env.erase(env.begin() + 16, env.end());
  container["env"] = env;
  EXPECT_TRUE(PodToProcess(Pod(Json::array({container}).dump()), PyTorch(), Host()).ok());
}

TEST(PodProcessTest, NoCommandIsInvalid) {
  auto p = PodToProcess(Pod(R"J([{"name":"pytorch","args":["x"]}])J"), PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
  EXPECT_NE(p.status().message().find("this pod has none"), std::string::npos);
}

TEST(PodProcessTest, UnsupportedSourcesAreNamed) {
  auto p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "env":[{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}])J"),
                        PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status()));
  EXPECT_NE(p.status().message().find("TOKEN"), std::string::npos);
  p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "envFrom":[{"configMapRef":{"name":"settings"}}]}])J"),
                   PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status()));
  EXPECT_NE(p.status().message().find("settings"), std::string::npos);
  p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "envFrom":[{"configMapRef":{"name":"settings","optional":true}}]}])J"),
                   PyTorch(), Host());
  EXPECT_TRUE(p.ok()) << p.status();
  p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "env":[{"name":"UID","valueFrom":{"fieldRef":{"fieldPath":"metadata.uid"}}}]}])J"),
                   PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status()));
  EXPECT_NE(p.status().message().find("UID"), std::string::npos);
}

TEST(PodProcessTest, InitContainersRejectedButMpiKubectlDeliverySkipped) {
  Json pod = Pod(R"J([{"name":"pytorch","command":["x"]}])J");
  pod["spec"]["initContainers"] = Json::parse(R"J([{"name":"setup","command":["y"]}])J");
  auto p = PodToProcess(pod, PyTorch(), Host());
  ASSERT_TRUE(absl::IsInvalidArgument(p.status()));
  EXPECT_NE(p.status().message().find("setup"), std::string::npos);
  pod["spec"]["initContainers"] = Json::parse(R"J([{"name":"kubectl-delivery"}])J");
  EXPECT_TRUE(PodToProcess(pod, Mpi(), Host()).ok());
}

TEST(PodProcessTest, Gpus) {
  auto p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "resources":{"limits":{"nvidia.com/gpu":"2"}}}])J"),
                        PyTorch(), Host());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->gpus, 2);
  p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "resources":{"requests":{"nvidia.com/gpu":1}}}])J"),
                   PyTorch(), Host());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->gpus, 1);
  p = PodToProcess(Pod(R"J([{"name":"pytorch","command":["x"],
      "resources":{"limits":{"nvidia.com/gpu":"1.5"}}}])J"),
                   PyTorch(), Host());
  EXPECT_TRUE(absl::IsInvalidArgument(p.status()));
}

TEST(PodProcessTest, EnvEntries) {
  EXPECT_EQ(EnvEntries({{"A", "1=2"}, {"B", ""}}), (std::vector<std::string>{"A=1=2", "B="}));
}

}  // namespace
}  // namespace coach::backend::local
