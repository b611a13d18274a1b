#include "api/v1/codec/yaml_json.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace coach::api::v1::codec {
namespace {

using nlohmann::json;

json ParseOne(const std::string& text) {
  auto value = ParseYaml(text);
  EXPECT_TRUE(value.ok()) << value.status() << "\n" << text;
  return value.ok() ? *value : json();
}

TEST(ResolvePlainScalarTest, CoreSchema) {
  EXPECT_EQ(ResolvePlainScalar("1"), json(1));
  EXPECT_TRUE(ResolvePlainScalar("1").is_number_integer());
  EXPECT_EQ(ResolvePlainScalar("-17"), json(-17));
  EXPECT_EQ(ResolvePlainScalar("0x1F"), json(31));
  EXPECT_EQ(ResolvePlainScalar("0o17"), json(15));
  EXPECT_TRUE(ResolvePlainScalar("1.5").is_number_float());
  EXPECT_TRUE(ResolvePlainScalar("1e3").is_number_float());
  EXPECT_EQ(ResolvePlainScalar("1e3"), json(1000.0));
  EXPECT_TRUE(ResolvePlainScalar(".5").is_number_float());
  EXPECT_EQ(ResolvePlainScalar("true"), json(true));
  EXPECT_EQ(ResolvePlainScalar("FALSE"), json(false));
  EXPECT_TRUE(ResolvePlainScalar("~").is_null());
  EXPECT_TRUE(ResolvePlainScalar("Null").is_null());
  EXPECT_TRUE(ResolvePlainScalar("").is_null());
  EXPECT_EQ(ResolvePlainScalar("yes"), json("yes"));
  EXPECT_EQ(ResolvePlainScalar("tRue"), json("tRue"));
  EXPECT_EQ(ResolvePlainScalar("1.2.3"), json("1.2.3"));
  EXPECT_EQ(ResolvePlainScalar("0x"), json("0x"));
  EXPECT_EQ(ResolvePlainScalar(".inf"), json(".inf"));
  EXPECT_EQ(ResolvePlainScalar("1e999"), json("1e999"));
}

TEST(ResolvePlainScalarTest, BigIntegers) {
  EXPECT_EQ(ResolvePlainScalar("9223372036854775807"), json(INT64_MAX));
  json big = ResolvePlainScalar("18446744073709551615");
  EXPECT_TRUE(big.is_number_unsigned());
  EXPECT_EQ(big.get<uint64_t>(), UINT64_MAX);
  EXPECT_TRUE(ResolvePlainScalar("123456789012345678901234567890").is_number_float());
  EXPECT_TRUE(ResolvePlainScalar("-9223372036854775809").is_number_float());
}

TEST(ParseYamlTest, QuotedScalarsStayStrings) {
  json v = ParseOne("a: \"1\"\nb: 'true'\nc: !!str 3\nd: 3\ne: 3.0\nf: null\ng:\n");
  EXPECT_EQ(v["a"], json("1"));
  EXPECT_EQ(v["b"], json("true"));
  EXPECT_EQ(v["c"], json("3"));
  EXPECT_TRUE(v["d"].is_number_integer());
  EXPECT_TRUE(v["e"].is_number_float());
  EXPECT_TRUE(v["f"].is_null());
  EXPECT_TRUE(v["g"].is_null());
}

TEST(ParseYamlTest, JsonIsYaml) {
  json v = ParseOne(R"({"a": [1, 2.5, "x", true, null], "b": {"c": "1"}})");
  EXPECT_EQ(v, json::parse(R"({"a": [1, 2.5, "x", true, null], "b": {"c": "1"}})"));
}

TEST(ParseYamlTest, MultipleDocumentsAndEmptyOnesSkipped) {
  auto docs = ParseYamlDocuments("---\n---\na: 1\n---\n# only a comment\n---\n- x\n...\n");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0], json::parse(R"({"a":1})"));
  EXPECT_EQ((*docs)[1], json::parse(R"(["x"])"));
}

TEST(ParseYamlTest, SyntaxErrorNamesLineAndColumn) {
  auto docs = ParseYamlDocuments("a: 1\nb: [1, 2\nc: 3\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(docs.status().message().find("line "), std::string::npos) << docs.status();
  EXPECT_NE(docs.status().message().find("column "), std::string::npos) << docs.status();
}

// Inputs the codec fuzzer found that made yaml-cpp 0.7 loop forever while allocating: a
// manifest is user input, so each must end quickly (as a value or an error).
TEST(ParseYamlTest, FuzzerFoundHangsEnd) {
  for (const std::string text : {",'\n-", ",,',",
                                 ",'\nk:l -\x11"
                                 "erst\n ex=p0 ai\nVersion k:ubeflow-",
                                 ",,,,',,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,0\nk:l -\x11"
                                 "erst\n ex=p0 ai\n"
                                 "Version k:ubeflow-"}) {
    absl::Time start = absl::Now();
    auto docs = ParseYamlDocuments(text);
    EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << text;
    if (docs.ok()) {
      for (const nlohmann::json& doc : *docs) EXPECT_FALSE(doc.is_null());
    }
  }
}

TEST(ParseYamlTest, DuplicateKeyIsAnError) {
  auto docs = ParseYamlDocuments("a: 1\na: 2\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("line 2"), std::string::npos) << docs.status();
  EXPECT_NE(docs.status().message().find("duplicate mapping key \"a\""), std::string::npos);
}

TEST(ParseYamlTest, NonScalarKeyIsAnError) {
  auto docs = ParseYamlDocuments("? [a, b]\n: 1\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("mapping keys must be scalars"), std::string::npos);
}

TEST(ParseYamlTest, AliasesExpand) {
  json v = ParseOne("a: &x {b: 1}\nc: *x\n");
  EXPECT_EQ(v["c"], json::parse(R"({"b":1})"));
}

TEST(ParseYamlTest, AliasBombIsRejected) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += (j ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  auto docs = ParseYamlDocuments(text);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("more than"), std::string::npos) << docs.status();
}

// Few values, long strings: a 10 KB manifest whose aliases of a 1 KB string nest 10 wide and 5
// deep would be 100 MB decoded (the values stay far under kMaxYamlNodes).
TEST(ParseYamlTest, AliasesOfLongStringsAreBoundedInBytes) {
  std::string text = "s0: &s0 \"" + std::string(1000, 'x') + "\"\n";
  for (int i = 1; i <= 5; ++i) {
    text += "s" + std::to_string(i) + ": &s" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += (j ? ", *s" : "*s") + std::to_string(i - 1);
    text += "]\n";
  }
  ASSERT_LT(text.size(), 2000u);
  auto docs = ParseYamlDocuments(text);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("bytes of keys and scalars"), std::string::npos)
      << docs.status();
  // Aliased keys count too.
  std::string keys = "k: &k \"" + std::string(1 << 20, 'k') + "\"\nm:\n";
  for (int i = 0; i < 20; ++i) keys += "  - {*k : " + std::to_string(i) + "}\n";
  docs = ParseYamlDocuments(keys);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("bytes of keys and scalars"), std::string::npos)
      << docs.status();
  // Within the bound: aliases still expand.
  auto fine = ParseYamlDocuments("a: &a \"" + std::string(1 << 19, 'a') + "\"\nb: [*a, *a, *a]\n");
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ((*fine)[0]["b"][2].get<std::string>().size(), 1u << 19);
  // The bound is above what a Kubernetes object may hold (1.5 MiB): a storable object passes.
  static_assert(kMaxYamlBytes > 3 * (1 << 19));
}

TEST(ParseYamlTest, DeepNestingIsRejected) {
  std::string text(kMaxYamlDepth + 5, '[');
  text += std::string(kMaxYamlDepth + 5, ']');
  auto docs = ParseYamlDocuments(text);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("nested deeper"), std::string::npos) << docs.status();
  // Very deep input is stopped by the parser's own guard, not a stack overflow.
  std::string deeper(100000, '[');
  EXPECT_FALSE(ParseYamlDocuments(deeper).ok());
}

// A field read on its own is held to the depth it has in its document.
TEST(ParseYamlTest, OuterDepthCountsTowardTheLimit) {
  auto nested = [](int depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_TRUE(ParseYaml(nested(kMaxYamlDepth)).ok());
  EXPECT_TRUE(ParseYaml(nested(kMaxYamlDepth - 4), 4).ok());
  auto deeper = ParseYaml(nested(kMaxYamlDepth - 3), 4);
  ASSERT_FALSE(deeper.ok());
  EXPECT_NE(deeper.status().message().find("nested deeper than 100 levels"), std::string::npos)
      << deeper.status();
}

TEST(ParseYamlTest, InvalidUtf8IsRejected) {
  auto docs = ParseYamlDocuments("a: \"\xff\xfe\"\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("UTF-8"), std::string::npos) << docs.status();
}

TEST(ToYamlTest, AmbiguousStringsAreQuotedAndRoundTrip) {
  const std::vector<std::string> tricky = {
      "1",      "true", "null", "",      "1e3",    "0x1F",        "~",         " lead",   "trail ",
      "a: b",   "- x",  "#c",   "yes",   "No",     "on",          "1.0",       "-1",      "+1",
      ".5",     "@x",   "`x",   "'q'",   "\"dq\"", "multi\nline", "tab\there", "ünïcödé", "[a]",
      "{a: 1}", "*x",   "&y",   "!tag",  "%p",     "a #b",        "? x",       "x:",      "|",
      ">",      "0o17", ".inf", "1_000", "12:30",  "=",           "<<",        "\x01"};
  json object = json::object();
  json array = json::array();
  for (const std::string& s : tricky) {
    object[s] = s;
    array.push_back(s);
  }
  json value = {{"object", object}, {"array", array}};
  std::string yaml = ToYaml(value);
  auto back = ParseYaml(yaml);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(*back, value) << yaml;
  EXPECT_NE(yaml.find("\"1\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("\"true\""), std::string::npos) << yaml;
}

TEST(ToYamlTest, TypesRoundTrip) {
  json value = json::parse(R"({
    "int": 3, "neg": -4, "float": 1.0, "small": 0.000001, "big": 1e300,
    "u64": 18446744073709551615, "bool": false, "null": null,
    "empty_map": {}, "empty_list": [], "nested": [[1, [2]], {"a": {"b": []}}]
  })");
  std::string yaml = ToYaml(value);
  auto back = ParseYaml(yaml);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(*back, value) << yaml;
  EXPECT_TRUE((*back)["float"].is_number_float());
  EXPECT_TRUE((*back)["int"].is_number_integer());
}

TEST(ToYamlTest, DocumentsRoundTrip) {
  std::vector<json> docs = {json::parse(R"({"a": 1})"), json::parse(R"(["b"])")};
  auto back = ParseYamlDocuments(ToYamlDocuments(docs));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, docs);
}

}  // namespace
}  // namespace coach::api::v1::codec
