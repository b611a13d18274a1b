#include "operator/core/label_selector.h"

#include <gtest/gtest.h>

namespace coach::core {
namespace {

using Labels = std::map<std::string, std::string>;

TEST(LabelSelectorTest, EmptyMatchesEverything) {
  auto s = LabelSelector::Parse("  ");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
  EXPECT_TRUE(s->Matches({}));
}

TEST(LabelSelectorTest, AllOperators) {
  auto s = LabelSelector::Parse("a=b, c==d ,e!=f,g,!h");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->requirements().size(), 5u);
  EXPECT_TRUE(s->Matches(Labels{{"a", "b"}, {"c", "d"}, {"g", ""}}));
  EXPECT_TRUE(s->Matches(Labels{{"a", "b"}, {"c", "d"}, {"e", "x"}, {"g", "1"}}));
  EXPECT_FALSE(s->Matches(Labels{{"a", "b"}, {"c", "d"}, {"e", "f"}, {"g", "1"}}));
  EXPECT_FALSE(s->Matches(Labels{{"a", "b"}, {"c", "d"}}));                          // no g
  EXPECT_FALSE(s->Matches(Labels{{"a", "b"}, {"c", "d"}, {"g", "1"}, {"h", "1"}}));  // has h
  EXPECT_FALSE(s->Matches(Labels{{"a", "x"}, {"c", "d"}, {"g", "1"}}));
  EXPECT_EQ(s->Equalities(), (Labels{{"a", "b"}, {"c", "d"}}));
  EXPECT_TRUE(s->HasNonEqualities());
}

TEST(LabelSelectorTest, PrefixedKeysAndEmptyValues) {
  auto s = LabelSelector::Parse("app.kubernetes.io/name=coach,empty=");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->Matches(Labels{{"app.kubernetes.io/name", "coach"}, {"empty", ""}}));
  EXPECT_FALSE(s->HasNonEqualities());
}

TEST(LabelSelectorTest, ErrorsNameTheTerm) {
  for (const char* bad :
       {"a=b,", "=b", "a b=c", "-a=b", "a=b=c", "env in (prod)", "a=-x-", "a!=", "!"}) {
    auto s = LabelSelector::Parse(bad);
    if (std::string(bad) == "a!=") {
      // An empty value is allowed: "a is not the empty string".
      EXPECT_TRUE(s.ok()) << bad;
      continue;
    }
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.status().message()).find("label_selector"), std::string::npos);
  }
  auto s = LabelSelector::Parse("env in (prod)");
  EXPECT_NE(std::string(s.status().message()).find("set-based"), std::string::npos);
}

}  // namespace
}  // namespace coach::core
