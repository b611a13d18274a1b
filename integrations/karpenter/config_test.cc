#include "integrations/karpenter/config.h"

#include <vector>

#include <gtest/gtest.h>

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
      {"nvidia.com/gpu=true", false, {}},           // no effect
      {"nvidia.com/gpu=true:Never", false, {}},     // unknown effect
      {"=true:NoSchedule", false, {}},              // no key
      {"a b=true:NoSchedule", false, {}},           // bad key
      {"gpu=not valid:NoSchedule", false, {}},      // bad value
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

}  // namespace
}  // namespace coach::karpenter
