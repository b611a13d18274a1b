#include "operator/trainer/elastic_nodes.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1/recovery_annotations.h"
#include "operator/trainer/field_error.h"

namespace coach::trainer {
namespace {

// The replicated job torch's rules address (PET_MASTER_ADDR names its first pod).
constexpr char kNodeJob[] = "node";

}  // namespace

absl::StatusOr<std::optional<ElasticNodes>> ReadElasticNodes(const nlohmann::json& train_job,
                                                             const ElasticFacts& facts) {
  const std::string key = api::v1::kAnnotationElasticMinNodes;
  if (!train_job.is_object() || !train_job.contains("metadata")) return std::nullopt;
  const nlohmann::json& meta = train_job["metadata"];
  if (!meta.is_object() || !meta.contains("annotations")) return std::nullopt;
  const nlohmann::json& annotations = meta["annotations"];
  if (!annotations.is_object() || !annotations.contains(key)) return std::nullopt;
  const nlohmann::json& value = annotations[key];
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  const std::string path = absl::StrCat("metadata.annotations[", key, "]");
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(Invalid(path, text, why).ToString());
  };
  if (!facts.torch) {
    return bad("elastic training is torchrun's: the runtime needs mlPolicy.torch");
  }
  if (facts.trainer_job != kNodeJob) {
    return bad(absl::StrCat("the runtime's trainer job must be named \"", kNodeJob, "\", not \"",
                            facts.trainer_job, "\""));
  }
  int64_t min = 0;
  // Digits only: SimpleAtoi would also take "+2" or " 2".
  if (!value.is_string() || text.empty() ||
      text.find_first_not_of("0123456789") != std::string::npos || !absl::SimpleAtoi(text, &min) ||
      min < 1 || min >= facts.num_nodes) {
    return bad(absl::StrCat("must be an integer N with 1 <= N < numNodes (numNodes is ",
                            facts.num_nodes, ")"));
  }
  return ElasticNodes{min, facts.num_nodes};
}

}  // namespace coach::trainer
