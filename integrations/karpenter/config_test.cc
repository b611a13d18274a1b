#include "integrations/karpenter/config.h"

#include <gtest/gtest.h>

#include <vector>

namespace coach::karpenter {
namespace {

struct TaintCase {
  const char* text;
  bool ok;
  Taint want;
};

TEST(ParseTaintTest, Table) {
  const std::vector<TaintCase> cases = {
      {"nvidia.com/gpu=true:NoSchedule", true, {"nvidia.com/gpu", "true", "NoSchedule"}},
      {"nvidia.com/gpu:NoSchedule", true, {"nvidia.com/gpu", "", "NoSchedule"}},
      {"gpu=yes:NoExecute", true, {"gpu", "yes", "NoExecute"}},
      {"", true, {}},
      {"nvidia.com/gpu=true", false, {}},        // no effect
      {"nvidia.com/gpu=true:Never", false, {}},  // unknown effect
      {"=true:NoSchedule", false, {}},           // no key
      {"a b=true:NoSchedule", false, {}},        // bad key
      {"gpu=not valid:NoSchedule", false, {}},   // bad value
  };
  for (const TaintCase& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Taint> taint = ParseTaint(c.text);
    ASSERT_EQ(taint.ok(), c.ok) << taint.status();
    if (!c.ok) continue;
    EXPECT_EQ(taint->key, c.want.key);
    EXPECT_EQ(taint->value, c.want.value);
    EXPECT_EQ(taint->effect, c.want.effect);
  }
}

TEST(ParseZonePolicyTest, NamesRoundTrip) {
  for (ZonePolicy p : {ZonePolicy::kNone, ZonePolicy::kPreferred, ZonePolicy::kRequired}) {
    absl::StatusOr<ZonePolicy> parsed = ParseZonePolicy(ZonePolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_FALSE(ParseZonePolicy("Preferred").ok());
}

struct FlagsCase {
  const char* scenario;
  ConfigFlags flags;
  const char* error;  // substring; nullptr: valid
};

TEST(ConfigFromFlagsTest, Table) {
  auto with = [](auto edit) {
    ConfigFlags f;
    edit(f);
    return f;
  };
  const std::vector<FlagsCase> cases = {
      {"defaults", ConfigFlags{}, nullptr},
      {"no CPU pool", with([](ConfigFlags& f) { f.cpu_nodepool = ""; }), nullptr},
      {"no taint", with([](ConfigFlags& f) { f.gpu_taint = ""; }), nullptr},
      {"no GPU pool", with([](ConfigFlags& f) { f.gpu_nodepool = ""; }),
       "--karpenter-gpu-nodepool"},
      {"bad CPU pool", with([](ConfigFlags& f) { f.cpu_nodepool = "a b"; }),
       "--karpenter-cpu-nodepool"},
      {"one pool for both", with([](ConfigFlags& f) { f.cpu_nodepool = "gpu-workloads"; }),
       "must differ"},
      {"bad taint", with([](ConfigFlags& f) { f.gpu_taint = "gpu"; }), "--karpenter-gpu-taint"},
      {"bad zone policy", with([](ConfigFlags& f) { f.zone_policy = "strict"; }),
       "--karpenter-zone-policy"},
  };
  for (const FlagsCase& c : cases) {
    SCOPED_TRACE(c.scenario);
    absl::StatusOr<Config> config = ConfigFromFlags(c.flags);
    if (c.error == nullptr) {
      EXPECT_TRUE(config.ok()) << config.status();
    } else {
      ASSERT_FALSE(config.ok());
      EXPECT_NE(config.status().message().find(c.error), std::string::npos) << config.status();
    }
  }
  absl::StatusOr<Config> config = ConfigFromFlags(ConfigFlags{});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->gpu_taint.key, "nvidia.com/gpu");
  EXPECT_EQ(config->zone_policy, ZonePolicy::kPreferred);
}

}  // namespace
}  // namespace coach::karpenter
