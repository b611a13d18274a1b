// libFuzzer target: ParseManifests on arbitrary bytes must never crash, and whatever it
// accepts must come back unchanged from its own YAML and JSON output. Defaulting and
// validation run on accepted jobs too, for crashes. Built by tools/suites/fuzz_codec.sh.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "api/v1/codec/job_codec.h"
#include "api/v1/defaults.h"
#include "api/v1/validation.h"
#include "google/protobuf/util/message_differencer.h"

namespace {

void Check(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "codec_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace coach::api::v1;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto jobs = codec::ParseManifests(text);
  if (!jobs.ok()) return 0;

  std::string yaml = codec::JobsToYaml(*jobs);
  auto from_yaml = codec::ParseManifests(yaml);
  Check(from_yaml.ok(), "own YAML rejected",
        std::string(from_yaml.status().message()) + "\n" + yaml);
  Check(from_yaml->size() == jobs->size(), "YAML round trip changed the job count", yaml);
  std::string json_text = codec::JobsToJson(*jobs);
  auto from_json = codec::ParseManifests(json_text);
  Check(from_json.ok(), "own JSON rejected", json_text);
  Check(from_json->size() == jobs->size(), "JSON round trip changed the job count", json_text);
  for (size_t i = 0; i < jobs->size(); ++i) {
    nlohmann::json first = codec::JobToJson((*jobs)[i]);
    Check(codec::JobToJson((*from_yaml)[i]) == first, "YAML round trip not stable", yaml);
    Check(codec::JobToJson((*from_json)[i]) == first, "JSON round trip not stable", json_text);
    TrainingJob job = (*jobs)[i];
    SetDefaults(&job);
    TrainingJob twice = job;
    SetDefaults(&twice);
    Check(google::protobuf::util::MessageDifferencer::Equals(twice, job),
          "defaulting not idempotent", job.DebugString());
    (void)Validate(job);
  }
  return 0;
}
