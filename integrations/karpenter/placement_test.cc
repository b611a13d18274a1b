#include "integrations/karpenter/placement.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coach::karpenter {
namespace {

using Json = nlohmann::json;

// Pod templates, as a job's replica template arrives (containers only, or the user's own
// placement on top).
constexpr char kGpu[] =
    R"({"spec":{"containers":[{"name":"pytorch","resources":{"limits":{"nvidia.com/gpu":1}}}]}})";
constexpr char kCpu[] = R"({"spec":{"containers":[{"name":"pytorch"}]}})";
constexpr char kAmdRequest[] =
    R"({"spec":{"containers":[{"name":"c","resources":{"requests":{"amd.com/gpu":"2"}}}]}})";
constexpr char kNeuronInit[] =
    R"({"spec":{"initContainers":[{"name":"i","resources":{"limits":{"aws.amazon.com/neuron":1}}}],"containers":[{"name":"c"}]}})";
constexpr char kGpuOwnPool[] =
    R"({"spec":{"nodeSelector":{"karpenter.sh/nodepool":"mine"},"tolerations":[{"key":"nvidia.com/gpu","operator":"Equal","value":"x","effect":"NoSchedule"}],"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1}}}]}})";
constexpr char kGpuTolerateAll[] =
    R"({"spec":{"tolerations":[{"operator":"Exists"}],"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1}}}]}})";
constexpr char kCpuTwoTerms[] =
    R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]},{"matchExpressions":[{"key":"b","operator":"Exists"}]}]}}},"containers":[{"name":"c"}]}})";
constexpr char kCpuOwnCapacity[] =
    R"({"spec":{"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]}]}}]}},"containers":[{"name":"c"}]}})";
constexpr char kCpuOwnZone[] =
    R"({"spec":{"nodeSelector":{"topology.kubernetes.io/zone":"z1"},"containers":[{"name":"c"}]}})";
constexpr char kCpuSpread[] =
    R"({"spec":{"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}],"containers":[{"name":"c"}]}})";
constexpr char kCpuDisruptible[] =
    R"({"metadata":{"annotations":{"karpenter.sh/do-not-disrupt":"false"}},"spec":{"containers":[{"name":"c"}]}})";
constexpr char kCpuBadAffinity[] = R"({"spec":{"affinity":"oops","containers":[{"name":"c"}]}})";

// Expected fragments.
constexpr char kGpuPool[] =
    R"({"spec":{"nodeSelector":{"karpenter.sh/nodepool":"gpu-workloads"}}})";
constexpr char kCpuPool[] =
    R"({"spec":{"nodeSelector":{"karpenter.sh/nodepool":"training-workloads"}}})";
constexpr char kGpuToleration[] =
    R"({"spec":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}})";
constexpr char kProtected[] =
    R"({"metadata":{"annotations":{"karpenter.sh/do-not-disrupt":"true"}}})";
constexpr char kPreferredZone[] =
    R"({"spec":{"affinity":{"podAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":{"matchLabels":{"training.kubeflow.org/job-name":"seed"}},"topologyKey":"topology.kubernetes.io/zone"}}]}}}})";
constexpr char kRequiredZone[] =
    R"({"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"training.kubeflow.org/job-name":"seed"}},"topologyKey":"topology.kubernetes.io/zone"}]}}}})";

Json Merge(std::initializer_list<const char*> fragments) {
  Json out = Json::object();
  for (const char* f : fragments) out.merge_patch(Json::parse(f));
  return out;
}

std::string Terms(const std::string& expressions) {
  return R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[)" +
         expressions + "]}]}}}}}";
}

// Every key of `want` is in `got` with an equal value; objects compare recursively, arrays
// and scalars exactly. `where` says which path differs.
bool Contains(const Json& got, const Json& want, std::string* where, const std::string& path = "") {
  if (want.is_object() && got.is_object()) {
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (!got.contains(it.key())) {
        *where = path + "/" + it.key() + " missing";
        return false;
      }
      if (!Contains(got[it.key()], it.value(), where, path + "/" + it.key())) return false;
    }
    return true;
  }
  if (got != want) {
    *where = path + ": got " + got.dump() + ", want " + want.dump();
    return false;
  }
  return true;
}

Config On() {
  Config c;
  c.enabled = true;
  return c;
}
Config Off() { return Config{}; }
Config OnNoCpuPool() {
  Config c = On();
  c.cpu_nodepool = "";
  return c;
}
Config OnRequiredZone() {
  Config c = On();
  c.zone_policy = ZonePolicy::kRequired;
  return c;
}
Config OnNoTaint() {
  Config c = On();
  c.gpu_taint = Taint{};
  return c;
}

struct Case {
  const char* scenario;
  Config config;
  Annotations annotations;
  const char* pod_template;
  Json want;                        // a fragment the result contains
  std::vector<std::string> absent;  // JSON pointers the result must not have
};

TEST(ApplyPlacementTest, Table) {
  const std::string preferred_zone = "/spec/affinity/podAffinity";
  const std::vector<Case> cases = {
      // The seed's GPU replica: GPU pool, its taint tolerated, one zone preferred, protected.
      {"gpu limit",
       On(),
       {},
       kGpu,
       Merge({kGpuPool, kGpuToleration, kProtected, kPreferredZone}),
       {"/spec/affinity/nodeAffinity"}},
      {"amd request", On(), {}, kAmdRequest, Merge({kGpuPool, kGpuToleration}), {}},
      {"neuron in an init container", On(), {}, kNeuronInit, Merge({kGpuPool, kGpuToleration}), {}},
      {"cpu-only replica: CPU pool, no toleration",
       On(),
       {},
       kCpu,
       Merge({kCpuPool, kProtected, kPreferredZone}),
       {"/spec/tolerations"}},
      {"no CPU pool: anywhere but the GPU pool",
       OnNoCpuPool(),
       {},
       kCpu,
       Json::parse(Terms(
           R"({"key":"karpenter.sh/nodepool","operator":"NotIn","values":["gpu-workloads"]})")),
       {"/spec/nodeSelector"}},
      {"policy off: nothing added",
       Off(),
       {},
       kGpu,
       Json::parse(kGpu),
       {"/spec/nodeSelector", "/spec/tolerations", "/spec/affinity", "/metadata/annotations"}},
      {"job opts out",
       On(),
       {{kAnnotationKarpenter, "false"}},
       kGpu,
       Json::object(),
       {"/spec/nodeSelector", "/metadata/annotations"}},
      {"job opts in on an operator without it",
       Off(),
       {{kAnnotationKarpenter, "true"}},
       kGpu,
       Merge({kGpuPool, kProtected}),
       {}},
      {"spot for every replica",
       On(),
       {{kAnnotationCapacityType, "spot"}},
       kCpu,
       Json::parse(
           Terms(R"({"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]})")),
       {}},
      {"GPU families and names on a GPU replica",
       On(),
       {{kAnnotationGpuInstanceFamily, "g5, g4dn,g5"},
        {kAnnotationGpuName, "a10g"},
        {kAnnotationCpuInstanceFamily, "c5"}},
       kGpu,
       Json::parse(Terms(
           R"({"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["g5","g4dn"]},{"key":"karpenter.k8s.aws/instance-gpu-name","operator":"In","values":["a10g"]})")),
       {}},
      {"CPU family on a CPU replica, GPU ones not",
       On(),
       {{kAnnotationGpuInstanceFamily, "g5"},
        {kAnnotationGpuName, "a10g"},
        {kAnnotationCpuInstanceFamily, "c5,m5"},
        {kAnnotationCapacityType, "on-demand"}},
       kCpu,
       Json::parse(Terms(
           R"({"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["c5","m5"]},{"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]})")),
       {}},
      {"requirement ANDed into every user term",
       On(),
       {{kAnnotationCapacityType, "spot"}},
       kCpuTwoTerms,
       Json::parse(
           R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"},{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]},{"matchExpressions":[{"key":"b","operator":"Exists"},{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]}]}}}}})"),
       {}},
      {"user's own capacity preference wins",
       On(),
       {{kAnnotationCapacityType, "spot"}},
       kCpuOwnCapacity,
       Json::object(),
       {"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"}},
      {"user's own pool and toleration win", On(), {}, kGpuOwnPool, Json::parse(kGpuOwnPool), {}},
      {"a tolerate-everything toleration is enough",
       On(),
       {},
       kGpuTolerateAll,
       Json::parse(R"({"spec":{"tolerations":[{"operator":"Exists"}]}})"),
       {}},
      {"pool without a taint: no toleration",
       OnNoTaint(),
       {},
       kGpu,
       Json::parse(kGpuPool),
       {"/spec/tolerations"}},
      {"zone required by the operator",
       OnRequiredZone(),
       {},
       kCpu,
       Json::parse(kRequiredZone),
       {"/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution"}},
      {"zone required by the job",
       On(),
       {{kAnnotationZonePolicy, "required"}},
       kGpu,
       Json::parse(kRequiredZone),
       {}},
      {"zone left free by the job",
       OnRequiredZone(),
       {{kAnnotationZonePolicy, "none"}},
       kGpu,
       Json::object(),
       {preferred_zone}},
      {"user's own zone selector wins",
       On(),
       {},
       kCpuOwnZone,
       Json::parse(kCpuOwnZone),
       {preferred_zone}},
      {"user's zone spread wins", On(), {}, kCpuSpread, Json::object(), {preferred_zone}},
      {"user's do-not-disrupt false stays",
       On(),
       {},
       kCpuDisruptible,
       Json::parse(kCpuDisruptible),
       {}},
      {"a malformed affinity is left for the API server",
       On(),
       {{kAnnotationCapacityType, "spot"}},
       kCpuBadAffinity,
       Json::parse(R"({"spec":{"affinity":"oops"}})"),
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    Json pod = Json::parse(c.pod_template);
    JobFacts job{c.annotations, {{"training.kubeflow.org/job-name", "seed"}}};
    ASSERT_TRUE(ApplyPlacement(c.config, job, pod).ok());
    std::string where;
    EXPECT_TRUE(Contains(pod, c.want, &where)) << where << "\n" << pod.dump();
    for (const std::string& pointer : c.absent) {
      EXPECT_FALSE(pod.contains(Json::json_pointer(pointer))) << pointer << "\n" << pod.dump();
    }
  }
}

TEST(ApplyPlacementTest, SameInputSameOutput) {
  Json a = Json::parse(kGpu);
  Json b = Json::parse(kGpu);
  const JobFacts job{{{kAnnotationCapacityType, "spot"}},
                     {{"training.kubeflow.org/job-name", "seed"}}};
  ASSERT_TRUE(ApplyPlacement(On(), job, a).ok());
  ASSERT_TRUE(ApplyPlacement(On(), job, b).ok());
  EXPECT_EQ(a, b);
}

TEST(ApplyPlacementTest, BadAnnotationIsAnErrorEvenWhenOff) {
  Json pod = Json::parse(kGpu);
  absl::Status s = ApplyPlacement(Off(), JobFacts{{{kAnnotationCapacityType, "spto"}}, {}}, pod);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("metadata.annotations[coach.dev/capacity-type]"), std::string::npos)
      << s.message();
  EXPECT_EQ(pod, Json::parse(kGpu));
}

TEST(GoesOnDemandTest, FromTheNthInterruption) {
  JobOptions options;
  EXPECT_FALSE(GoesOnDemand(options, 0));
  EXPECT_FALSE(GoesOnDemand(options, 1000));
  options.on_demand_after = 2;
  EXPECT_FALSE(GoesOnDemand(options, 0));
  EXPECT_FALSE(GoesOnDemand(options, 1));
  EXPECT_TRUE(GoesOnDemand(options, 2));
  EXPECT_TRUE(GoesOnDemand(options, 3));
}

// Templates that ask for spot themselves.
constexpr char kCpuSpotSelector[] =
    R"({"spec":{"nodeSelector":{"karpenter.sh/capacity-type":"spot","disk":"ssd"},"containers":[{"name":"c"}]}})";
constexpr char kCpuSpotAffinity[] =
    R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]},{"key":"a","operator":"Exists"}]},{"matchExpressions":[{"key":"b","operator":"Exists"}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"preference":{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]}},{"weight":5,"preference":{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"NotIn","values":["on-demand"]},{"key":"topology.kubernetes.io/zone","operator":"In","values":["z1"]}]}}]}},"containers":[{"name":"c"}]}})";
// Spot or node n1: without the capacity type, the first term admits every node.
constexpr char kCpuSpotOrNode[] =
    R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"preference":{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]}}]},"podAntiAffinity":{}},"containers":[{"name":"c"}]}})";
constexpr char kCpuOnlySpotAffinity[] =
    R"({"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]}]}]}}},"containers":[{"name":"c"}]}})";

constexpr char kOnDemand[] =
    R"({"spec":{"nodeSelector":{"karpenter.sh/capacity-type":"on-demand"}}})";

struct OnDemandCase {
  const char* scenario;
  Config config;
  Annotations annotations;
  int interruptions;
  const char* pod_template;
  Json want;                                               // a fragment the result contains
  std::vector<std::string> absent;                         // JSON pointers the result must not have
  std::vector<std::pair<std::string, const char*>> exact;  // JSON pointer -> its whole value
};

TEST(ApplyPlacementTest, OnDemandAfterInterruptions) {
  const Annotations after2 = {{kAnnotationOnDemandAfter, "2"}};
  const char* kNodeAffinity = "/spec/affinity/nodeAffinity";
  const std::vector<OnDemandCase> cases = {
      {"below N, policy off: nothing",
       Off(),
       after2,
       1,
       kCpuSpotSelector,
       Json::parse(kCpuSpotSelector),
       {"/metadata"},
       {{"/spec/nodeSelector", R"({"karpenter.sh/capacity-type":"spot","disk":"ssd"})"}}},
      {"below N, policy on: the usual placement",
       On(),
       {{kAnnotationOnDemandAfter, "2"}, {kAnnotationCapacityType, "spot"}},
       1,
       kGpu,
       Merge({kGpuPool, kGpuToleration, kProtected,
              Terms(R"({"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]})")
                  .c_str()}),
       {"/spec/nodeSelector/karpenter.sh~1capacity-type"},
       {}},
      {"at N, policy off: on-demand and nothing else",
       Off(),
       after2,
       2,
       kGpu,
       Json::parse(kOnDemand),
       {"/metadata", "/spec/tolerations", "/spec/affinity"},
       {{"/spec/nodeSelector", R"({"karpenter.sh/capacity-type":"on-demand"})"}}},
      {"past N, policy on: on-demand and the rest of the placement",
       On(),
       after2,
       5,
       kGpu,
       Merge({kGpuPool, kGpuToleration, kProtected, kPreferredZone, kOnDemand}),
       {kNodeAffinity},
       {}},
      {"at N, job opted out: on-demand all the same",
       On(),
       {{kAnnotationOnDemandAfter, "1"}, {kAnnotationKarpenter, "false"}},
       1,
       kCpu,
       Json::parse(kOnDemand),
       {"/metadata", "/spec/affinity"},
       {{"/spec/nodeSelector", R"({"karpenter.sh/capacity-type":"on-demand"})"}}},
      {"the template's spot selector is replaced, its other labels stay",
       Off(),
       after2,
       2,
       kCpuSpotSelector,
       Json::object(),
       {},
       {{"/spec/nodeSelector", R"({"karpenter.sh/capacity-type":"on-demand","disk":"ssd"})"}}},
      {"capacity expressions leave required and preferred terms, the rest stays",
       Off(),
       after2,
       2,
       kCpuSpotAffinity,
       Json::parse(kOnDemand),
       {},
       {{kNodeAffinity,
         R"({"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]},{"matchExpressions":[{"key":"b","operator":"Exists"}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["z1"]}]}}]})"}}},
      {"coach's requirements go into the user's remaining terms",
       On(),
       {{kAnnotationOnDemandAfter, "2"}, {kAnnotationCpuInstanceFamily, "c5"}},
       2,
       kCpuSpotAffinity,
       Json::parse(kOnDemand),
       {},
       {{"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
         R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"},{"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["c5"]}]},{"matchExpressions":[{"key":"b","operator":"Exists"},{"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["c5"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]})"}}},
      // Left empty, the term would match no node: with the other term, only n1 would do.
      {"a term that only asked for spot admits every node: the requirement goes",
       Off(),
       after2,
       2,
       kCpuSpotOrNode,
       Json::parse(kOnDemand),
       {kNodeAffinity},
       {{"/spec/affinity", R"({"podAntiAffinity":{}})"}}},
      {"an affinity with nothing left goes",
       Off(),
       after2,
       2,
       kCpuOnlySpotAffinity,
       Json::parse(kOnDemand),
       {"/spec/affinity"},
       {}},
      {"with nothing left of the user's, coach's requirements get a term of their own",
       On(),
       {{kAnnotationOnDemandAfter, "2"}, {kAnnotationCpuInstanceFamily, "c5"}},
       2,
       kCpuOnlySpotAffinity,
       Merge(
           {kOnDemand,
            Terms(R"({"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["c5"]})")
                .c_str()}),
       {},
       {{"/spec/affinity/nodeAffinity",
         R"({"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"karpenter.k8s.aws/instance-family","operator":"In","values":["c5"]}]}]}})"}}},
      {"coach.dev/capacity-type spot is replaced",
       On(),
       {{kAnnotationOnDemandAfter, "3"},
        {kAnnotationCapacityType, "spot"},
        {kAnnotationGpuName, "a10g"}},
       3,
       kGpu,
       Merge({kGpuPool, kOnDemand}),
       {},
       {{"/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
         R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"karpenter.k8s.aws/instance-gpu-name","operator":"In","values":["a10g"]}]}]})"}}},
      {"coach.dev/capacity-type alone leaves no node affinity",
       On(),
       {{kAnnotationOnDemandAfter, "1"}, {kAnnotationCapacityType, "spot,on-demand"}},
       1,
       kCpu,
       Merge({kCpuPool, kOnDemand}),
       {kNodeAffinity},
       {}},
      {"a malformed affinity is left for the API server",
       Off(),
       after2,
       2,
       kCpuBadAffinity,
       Merge({kOnDemand, R"({"spec":{"affinity":"oops"}})"}),
       {},
       {}},
  };
  for (const OnDemandCase& c : cases) {
    SCOPED_TRACE(c.scenario);
    Json pod = Json::parse(c.pod_template);
    JobFacts job{c.annotations, {{"training.kubeflow.org/job-name", "seed"}}, c.interruptions};
    ASSERT_TRUE(ApplyPlacement(c.config, job, pod).ok());
    std::string where;
    EXPECT_TRUE(Contains(pod, c.want, &where)) << where << "\n" << pod.dump();
    for (const std::string& pointer : c.absent) {
      EXPECT_FALSE(pod.contains(Json::json_pointer(pointer))) << pointer << "\n" << pod.dump();
    }
    for (const auto& [pointer, value] : c.exact) {
      const Json::json_pointer at(pointer);
      ASSERT_TRUE(pod.contains(at)) << pointer << "\n" << pod.dump();
      EXPECT_EQ(pod.at(at), Json::parse(value)) << pointer;
    }
  }
}

TEST(ApplyPlacementTest, BelowNTheSameAsWithoutTheAnnotation) {
  for (const char* pod_template : {kGpu, kCpuSpotSelector, kCpuSpotAffinity}) {
    SCOPED_TRACE(pod_template);
    Json with = Json::parse(pod_template);
    Json without = with;
    const Annotations capacity = {{kAnnotationCapacityType, "spot"}};
    Annotations after3 = capacity;
    after3[kAnnotationOnDemandAfter] = "3";
    ASSERT_TRUE(ApplyPlacement(On(), JobFacts{after3, {}, 2}, with).ok());
    ASSERT_TRUE(ApplyPlacement(On(), JobFacts{capacity, {}, 2}, without).ok());
    EXPECT_EQ(with, without);
  }
}

}  // namespace
}  // namespace coach::karpenter
