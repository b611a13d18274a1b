#include "operator/trainer/strategic_merge.h"

#include <gtest/gtest.h>

namespace coach::trainer {
namespace {

using json = nlohmann::json;

TEST(StrategicMergeTest, Table) {
  struct Case {
    const char* scenario;
    const char* base;
    const char* patch;
    const char* want;
  };
  // clang-format off
  const Case cases[] = {
      {"objects merge, null deletes", R"({"a": 1, "b": {"c": 2, "d": 3}})", R"({"b": {"c": null, "e": 4}})",
       R"({"a": 1, "b": {"d": 3, "e": 4}})"},
      {"env merges by name, new ones appended", R"({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]})",
       R"({"env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]})",
       R"({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]})"},
      {"plain lists are replaced", R"({"tolerations": [{"key": "a"}], "args": ["x"]})",
       R"({"tolerations": [{"key": "b"}], "args": ["y", "z"]})", R"({"tolerations": [{"key": "b"}], "args": ["y", "z"]})"},
      {"volume mounts by mountPath", R"({"volumeMounts": [{"name": "a", "mountPath": "/a"}]})",
       R"({"volumeMounts": [{"name": "b", "mountPath": "/a"}]})", R"({"volumeMounts": [{"name": "b", "mountPath": "/a"}]})"},
      {"containers merge by name", R"({"containers": [{"name": "node", "image": "i", "env": [{"name": "A", "value": "1"}]}]})",
       R"({"containers": [{"name": "node", "env": [{"name": "B", "value": "2"}]}]})",
       R"({"containers": [{"name": "node", "image": "i", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]})"},
  };
  // clang-format on
  for (const Case& c : cases) {
    json base = json::parse(c.base);
    absl::Status s = StrategicMerge(base, json::parse(c.patch), "p");
    ASSERT_TRUE(s.ok()) << c.scenario << ": " << s;
    EXPECT_EQ(base, json::parse(c.want)) << c.scenario;
  }
}

TEST(StrategicMergeTest, KeyedElementWithoutKeyIsRefused) {
  json base = json::parse(R"({"env": []})");
  absl::Status s = StrategicMerge(base, json::parse(R"({"env": [{"value": "x"}]})"), "p");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "p.env[0].name: required to merge into env");
}

}  // namespace
}  // namespace coach::trainer
