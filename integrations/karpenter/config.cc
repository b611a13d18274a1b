#include "integrations/karpenter/config.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace coach::karpenter {
namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A label key: [prefix/]name, the name a label value, the prefix a DNS subdomain.
bool IsLabelKey(absl::string_view key) {
  const size_t slash = key.rfind('/');
  if (slash == absl::string_view::npos) return IsLabelValue(key);
  const absl::string_view prefix = key.substr(0, slash);
  if (prefix.empty() || prefix.size() > 253) return false;
  for (char c : prefix) {
    if (!IsAlnum(c) && c != '-' && c != '.') return false;
  }
  return IsLabelValue(key.substr(slash + 1));
}

}  // namespace

bool IsLabelValue(absl::string_view value) {
  if (value.empty() || value.size() > 63) return false;
  if (!IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

absl::StatusOr<Taint> ParseTaint(absl::string_view text) {
  if (text.empty()) return Taint{};
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\": want key[=value]:Effect, e.g. nvidia.com/gpu=true:NoSchedule"));
  }
  Taint taint;
  taint.effect = std::string(text.substr(colon + 1));
  if (taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" &&
      taint.effect != "NoExecute") {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", text, "\": the effect must be NoSchedule, PreferNoSchedule or NoExecute"));
  }
  const absl::string_view key_value = text.substr(0, colon);
  const size_t eq = key_value.find('=');
  taint.key = std::string(key_value.substr(0, eq));
  if (eq != absl::string_view::npos) taint.value = std::string(key_value.substr(eq + 1));
  if (!IsLabelKey(taint.key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\": \"", taint.key, "\" is not a valid taint key"));
  }
  if (!taint.value.empty() && !IsLabelValue(taint.value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\": \"", taint.value, "\" is not a valid taint value"));
  }
  return taint;
}

absl::StatusOr<ZonePolicy> ParseZonePolicy(absl::string_view text) {
  if (text == "none") return ZonePolicy::kNone;
  if (text == "preferred") return ZonePolicy::kPreferred;
  if (text == "required") return ZonePolicy::kRequired;
  return absl::InvalidArgumentError(
      absl::StrCat("must be none, preferred or required, got \"", text, "\""));
}

absl::StatusOr<Config> ConfigFromFlags(const ConfigFlags& flags) {
  Config config;
  config.enabled = flags.enabled;
  if (!IsLabelValue(flags.gpu_nodepool)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--karpenter-gpu-nodepool: \"", flags.gpu_nodepool, "\" is not a NodePool name"));
  }
  config.gpu_nodepool = flags.gpu_nodepool;
  if (!flags.cpu_nodepool.empty() && !IsLabelValue(flags.cpu_nodepool)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--karpenter-cpu-nodepool: \"", flags.cpu_nodepool, "\" is not a NodePool name"));
  }
  if (flags.cpu_nodepool == flags.gpu_nodepool) {
    // CPU-only replicas on the GPU pool is what the policy exists to prevent.
    return absl::InvalidArgumentError(
        "--karpenter-cpu-nodepool: must differ from --karpenter-gpu-nodepool");
  }
  config.cpu_nodepool = flags.cpu_nodepool;
  absl::StatusOr<Taint> taint = ParseTaint(flags.gpu_taint);
  if (!taint.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--karpenter-gpu-taint: ", taint.status().message()));
  }
  config.gpu_taint = *taint;
  absl::StatusOr<ZonePolicy> zone = ParseZonePolicy(flags.zone_policy);
  if (!zone.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--karpenter-zone-policy: ", zone.status().message()));
  }
  config.zone_policy = *zone;
  return config;
}

std::string ZonePolicyName(ZonePolicy policy) {
  switch (policy) {
    case ZonePolicy::kNone:
      return "none";
    case ZonePolicy::kPreferred:
      return "preferred";
    case ZonePolicy::kRequired:
      return "required";
  }
  return "none";
}

}  // namespace coach::karpenter
