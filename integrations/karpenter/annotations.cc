#include "integrations/karpenter/annotations.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace coach::karpenter {
namespace {

absl::Status Bad(const char* annotation, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("metadata.annotations[", annotation, "]: ", why));
}

const std::string* Find(const Annotations& annotations, const char* key) {
  auto it = annotations.find(key);
  return it == annotations.end() ? nullptr : &it->second;
}

// "a, b,a" -> {a, b}: items trimmed, duplicates dropped, order kept. Every item must be a
// label value (it becomes a node requirement's value); an empty item is an error rather
// than skipped, as "g5,,g4dn" is more likely a typo than a wish.
absl::StatusOr<std::vector<std::string>> ParseList(const Annotations& annotations,
                                                   const char* key) {
  std::vector<std::string> out;
  const std::string* value = Find(annotations, key);
  if (value == nullptr) return out;
  for (absl::string_view item : absl::StrSplit(*value, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (!IsLabelValue(item)) {
      return Bad(key, item.empty() ? absl::StrCat("\"", *value, "\" has an empty item")
                                   : absl::StrCat("\"", item, "\" is not a valid label value"));
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
  }
  return out;
}

}  // namespace

absl::StatusOr<JobOptions> ParseJobOptions(const Annotations& annotations) {
  JobOptions options;
  if (const std::string* v = Find(annotations, kAnnotationKarpenter)) {
    if (*v != "true" && *v != "false") {
      return Bad(kAnnotationKarpenter,
                 absl::StrCat("must be \"true\" or \"false\", got \"", *v, "\""));
    }
    options.enabled = *v == "true";
  }
  absl::StatusOr<std::vector<std::string>> capacity =
      ParseList(annotations, kAnnotationCapacityType);
  if (!capacity.ok()) return capacity.status();
  for (const std::string& c : *capacity) {
    if (c != "spot" && c != "on-demand" && c != "reserved") {
      return Bad(kAnnotationCapacityType,
                 absl::StrCat("\"", c, "\" is not spot, on-demand or reserved"));
    }
  }
  options.capacity_types = *std::move(capacity);
  for (const auto& [key, field] :
       {std::pair{kAnnotationGpuInstanceFamily, &options.gpu_instance_families},
        std::pair{kAnnotationGpuName, &options.gpu_names},
        std::pair{kAnnotationCpuInstanceFamily, &options.cpu_instance_families}}) {
    absl::StatusOr<std::vector<std::string>> list = ParseList(annotations, key);
    if (!list.ok()) return list.status();
    *field = *std::move(list);
  }
  if (const std::string* v = Find(annotations, kAnnotationZonePolicy)) {
    absl::StatusOr<ZonePolicy> policy = ParseZonePolicy(*v);
    if (!policy.ok()) return Bad(kAnnotationZonePolicy, policy.status().message());
    options.zone_policy = *policy;
  }
  if (const std::string* v = Find(annotations, kAnnotationOnDemandAfter)) {
    // Digits only: SimpleAtoi alone would also take " 3" and "+3".
    int n = 0;
    if (v->empty() || !std::all_of(v->begin(), v->end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(*v, &n) || n < 1 || n > 100) {
      return Bad(kAnnotationOnDemandAfter,
                 absl::StrCat("must be an integer 1..100, got \"", *v, "\""));
    }
    options.on_demand_after = n;
  }
  return options;
}

}  // namespace coach::karpenter
