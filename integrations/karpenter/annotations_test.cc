#include "integrations/karpenter/annotations.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coach::karpenter {
namespace {

struct Case {
  const char* scenario;
  Annotations annotations;
  const char* error;  // substring of the error; nullptr: valid
};

TEST(ParseJobOptionsTest, Table) {
  const std::vector<Case> cases = {
      {"none", {}, nullptr},
      {"all valid",
       {{kAnnotationKarpenter, "true"},
        {kAnnotationCapacityType, "spot,on-demand"},
        {kAnnotationGpuInstanceFamily, "g5,g4dn"},
        {kAnnotationGpuName, "a10g"},
        {kAnnotationCpuInstanceFamily, "c5"},
        {kAnnotationZonePolicy, "required"}},
       nullptr},
      {"reserved capacity", {{kAnnotationCapacityType, "reserved"}}, nullptr},
      {"unrelated annotation", {{"coach.dev/other", "x y"}}, nullptr},
      {"karpenter yes",
       {{kAnnotationKarpenter, "yes"}},
       "metadata.annotations[coach.dev/karpenter]: must be \"true\" or \"false\""},
      {"capacity typo",
       {{kAnnotationCapacityType, "spto"}},
       "metadata.annotations[coach.dev/capacity-type]: \"spto\" is not spot, on-demand or "
       "reserved"},
      {"empty capacity",
       {{kAnnotationCapacityType, ""}},
       "metadata.annotations[coach.dev/capacity-type]: \"\" has an empty item"},
      {"empty item in a family",
       {{kAnnotationGpuInstanceFamily, "g5,,g4dn"}},
       "metadata.annotations[coach.dev/gpu-instance-family]: \"g5,,g4dn\" has an empty item"},
      {"family not a label value",
       {{kAnnotationCpuInstanceFamily, "c5/large"}},
       "metadata.annotations[coach.dev/cpu-instance-family]: \"c5/large\" is not a valid label "
       "value"},
      {"gpu name too long",
       {{kAnnotationGpuName, std::string(64, 'a')}},
       "metadata.annotations[coach.dev/gpu-name]"},
      {"zone policy typo",
       {{kAnnotationZonePolicy, "strict"}},
       "metadata.annotations[coach.dev/zone-policy]: must be none, preferred or required, got "
       "\"strict\""},
      {"on-demand after 1", {{kAnnotationOnDemandAfter, "1"}}, nullptr},
      {"on-demand after 100", {{kAnnotationOnDemandAfter, "100"}}, nullptr},
      {"on-demand after 0",
       {{kAnnotationOnDemandAfter, "0"}},
       "metadata.annotations[coach.dev/on-demand-after]: must be an integer 1..100, got \"0\""},
      {"on-demand after 101",
       {{kAnnotationOnDemandAfter, "101"}},
       "metadata.annotations[coach.dev/on-demand-after]: must be an integer 1..100, got \"101\""},
      {"on-demand after 2x",
       {{kAnnotationOnDemandAfter, "2x"}},
       "metadata.annotations[coach.dev/on-demand-after]: must be an integer 1..100, got \"2x\""},
      {"on-demand after nothing",
       {{kAnnotationOnDemandAfter, ""}},
       "metadata.annotations[coach.dev/on-demand-after]: must be an integer 1..100, got \"\""},
      {"on-demand after a signed number",
       {{kAnnotationOnDemandAfter, "+3"}},
       "metadata.annotations[coach.dev/on-demand-after]"},
      {"on-demand after a padded number",
       {{kAnnotationOnDemandAfter, " 3"}},
       "metadata.annotations[coach.dev/on-demand-after]"},
      {"on-demand after a huge number",
       {{kAnnotationOnDemandAfter, "99999999999999999999"}},
       "metadata.annotations[coach.dev/on-demand-after]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    absl::StatusOr<JobOptions> options = ParseJobOptions(c.annotations);
    if (c.error == nullptr) {
      EXPECT_TRUE(options.ok()) << options.status();
    } else {
      ASSERT_FALSE(options.ok());
      EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(options.status().message().find(c.error), std::string::npos)
          << options.status().message();
    }
  }
}

TEST(ParseJobOptionsTest, ListsAreTrimmedAndDeduplicated) {
  absl::StatusOr<JobOptions> options = ParseJobOptions(
      {{kAnnotationGpuInstanceFamily, " g5 , g4dn,g5"}, {kAnnotationKarpenter, "false"}});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->gpu_instance_families, (std::vector<std::string>{"g5", "g4dn"}));
  EXPECT_EQ(options->enabled, false);
}

TEST(ParseJobOptionsTest, OnDemandAfter) {
  absl::StatusOr<JobOptions> none = ParseJobOptions({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->on_demand_after, std::nullopt);
  absl::StatusOr<JobOptions> three = ParseJobOptions({{kAnnotationOnDemandAfter, "3"}});
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->on_demand_after, 3);
}

}  // namespace
}  // namespace coach::karpenter
