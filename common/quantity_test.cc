#include "common/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// Expected values: k8s.io/apimachinery resource.Quantity (ParseQuantity, Add keeps the
// receiver's format, String/MarshalJSON print CanonicalizeBytes' form).

namespace coach {
namespace {

TEST(QuantityTest, SumsInCanonicalForm) {
  struct Case {
    std::vector<std::string> addends;  // added in order to the first
    const char* want;                  // "": the first does not parse
  };
  // clang-format off
  const Case cases[] = {
      {{"1"}, "1"},
      {{"4"}, "4"},
      {{"0"}, "0"},
      {{"1.5"}, "1500m"},
      {{"500m", "500m"}, "1"},
      {{"1", "500m"}, "1500m"},
      {{"250m", "250m", "250m"}, "750m"},
      {{"2000"}, "2k"},
      {{"1500"}, "1500"},
      {{"1k", "1"}, "1001"},
      {{"1G", "500M"}, "1500M"},
      {{"1Gi"}, "1Gi"},
      {{"1Gi", "1Gi"}, "2Gi"},
      {{"1Gi", "512Mi"}, "1536Mi"},
      {{"0.5Gi"}, "512Mi"},
      {{"1536"}, "1536"},
      {{"2Ki", "1"}, "2049"},            // binary, whole, not a multiple of 1024
      {{"512"}, "512"},
      {{"100Mi", "1G"}, "1104857600"},   // binary format kept, no suffix divides it
      {{"1G", "1Gi"}, "2073741824"},     // decimal format kept
      {{"1Ki", "0.5"}, "1024500m"},      // binary but not whole: decimal
      {{"1e3"}, "1e3"},
      {{"1e3", "1"}, "1001"},
      {{"1E6"}, "1e6"},
      {{"0.1"}, "100m"},
      {{"1n"}, "1n"},
      {{"0.0000000001"}, "1n"},         // below a nano: rounded up
      {{"+2"}, "2"},
      {{"8", "8", "8", "8"}, "32"},
      {{""}, ""},
      {{"abc"}, ""},
      {{"1x"}, ""},
      {{"."}, ""},
      {{"1e"}, ""},
      {{"1Gb"}, ""},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.addends.front());
    std::optional<Quantity> sum = Quantity::Parse(c.addends.front());
    if (std::string(c.want).empty()) {
      EXPECT_FALSE(sum.has_value());
      continue;
    }
    ASSERT_TRUE(sum.has_value());
    for (size_t i = 1; i < c.addends.size(); ++i) {
      std::optional<Quantity> q = Quantity::Parse(c.addends[i]);
      ASSERT_TRUE(q.has_value()) << c.addends[i];
      sum->Add(*q);
    }
    EXPECT_EQ(sum->ToString(), c.want);
  }
}

TEST(QuantityTest, ValueRoundsWholeUnitsAwayFromZero) {
  struct Case {
    const char* text;
    int64_t want;
  };
  const Case cases[] = {{"2", 2}, {"1500m", 2}, {"1", 1},       {"1m", 1},
                        {"0", 0}, {"2.0", 2},   {"-1500m", -2}, {"16Gi", 17179869184}};
  for (const Case& c : cases) {
    std::optional<Quantity> q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.has_value()) << c.text;
    EXPECT_EQ(q->Value(), c.want) << c.text;
  }
}

}  // namespace
}  // namespace coach
