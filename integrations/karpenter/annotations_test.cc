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

}  // namespace
}  // namespace coach::karpenter
