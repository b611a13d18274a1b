// Every field the upstream CRDs declare in spec (outside pod templates) and status must
// survive JobFromJson -> JobToJson: a field upstream knows and coach drops fails here. So must
// every field of coach's own CRDs (charts/coach/crds), status.coach included: a field the CRD
// stores and the codec cannot read would make the kube backend unable to read the job.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "api/v1/codec/job_codec.h"
#include "api/v1/codec/yaml_json.h"
#include "api/v1/kinds.h"

namespace coach::api::v1::codec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Generator {
 public:
  explicit Generator(const KindInfo& info) : info_(info) {}

  // A type-correct value for every property of `schema`; `path` is the JSON path so far.
  json Value(const json& schema, const std::string& path) {
    ++fields_;
    if (path.size() > 9 && path.substr(path.size() - 9) == ".template") {
      return json::parse(R"({"spec": {"containers": [{"name": "c", "image": "i"}]}})");
    }
    if (schema.value("x-kubernetes-int-or-string", false)) return json("5");
    std::string type = schema.value("type", "");
    if (schema.contains("properties")) {
      json out = json::object();
      for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
        out[it.key()] = Value(it.value(), path + "." + it.key());
      }
      return out;
    }
    if (type == "object" && schema.contains("additionalProperties")) {
      bool replica_map = path == "spec." + std::string(info_.replica_specs_key);
      std::string key = replica_map ? std::string(info_.replica_types.back()) : "key1";
      return json{{key, Value(schema["additionalProperties"], path + "." + key)}};
    }
    if (type == "object") return json{{"free", "form"}};
    if (type == "array")
      return json::array({Value(schema.value("items", json::object()), path + "[]")});
    if (type == "integer") return json(7);
    if (type == "number") return json(1.5);
    if (type == "boolean") return json(true);
    if (type == "string") {
      // Not "": an empty string is the same as no value, and is left out on the way back.
      if (schema.contains("enum")) {
        for (const json& value : schema["enum"]) {
          if (value != "") return value;
        }
      }
      if (schema.value("format", "") == "date-time") return json("2024-05-01T12:00:00Z");
      return json("v" + std::to_string(++strings_));
    }
    ADD_FAILURE() << path << ": schema without a type coach's test understands: " << schema;
    return json();
  }

  int fields() const { return fields_; }

 private:
  const KindInfo& info_;
  int fields_ = 0;
  int strings_ = 0;
};

// Decodes and encodes a manifest with every field of each v1 CRD in `dir`; the CRDs checked.
int CheckEveryFieldSurvives(const fs::path& dir) {
  int crds = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string file = entry.path().filename().string();
    if (file.rfind("kubeflow.org_", 0) != 0) continue;
    SCOPED_TRACE(file);
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto crd = ParseYaml(text.str());
    EXPECT_TRUE(crd.ok()) << crd.status();
    if (!crd.ok()) continue;
    std::string kind = (*crd)["spec"]["names"]["kind"];
    const KindInfo* info = FindKindByName(kind);
    EXPECT_NE(info, nullptr) << kind;
    if (info == nullptr) continue;
    for (const json& version : (*crd)["spec"]["versions"]) {
      if (version["name"] != "v1") continue;
      const json& schema = version["schema"]["openAPIV3Schema"]["properties"];
      Generator gen(*info);
      json manifest = {{"apiVersion", "kubeflow.org/v1"},
                       {"kind", kind},
                       {"metadata", {{"name", "full"}, {"namespace", "ns"}}},
                       {"spec", gen.Value(schema["spec"], "spec")},
                       {"status", gen.Value(schema["status"], "status")}};
      EXPECT_GT(gen.fields(), 30);
      auto job = JobFromJson(manifest);
      EXPECT_TRUE(job.ok()) << job.status() << "\n" << manifest.dump(2);
      if (!job.ok()) continue;
      json back = JobToJson(*job);
      EXPECT_EQ(back, manifest) << "diff: " << json::diff(manifest, back).dump(2);
      // And through YAML text.
      auto again = ParseManifests(JobToYamlString(*job));
      EXPECT_TRUE(again.ok()) << again.status();
      if (again.ok()) {
        EXPECT_EQ(JobToJson(again->front()), manifest);
      }
      ++crds;
    }
  }
  return crds;
}

TEST(CrdCoverageTest, EveryUpstreamFieldSurvivesTheCodec) {
  const char* shared = std::getenv("COACH_SHARED_DIR");
  ASSERT_NE(shared, nullptr) << "COACH_SHARED_DIR must point at the shared reference folder";
  fs::path dir = fs::path(shared) / "reference" / "kubeflow-v1-crds";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  EXPECT_EQ(CheckEveryFieldSurvives(dir), 6);
}

TEST(CrdCoverageTest, EveryFieldOfCoachsCrdsSurvivesTheCodec) {
  fs::path dir = "charts/coach/crds";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  EXPECT_EQ(CheckEveryFieldSurvives(dir), 6);
}

}  // namespace
}  // namespace coach::api::v1::codec
