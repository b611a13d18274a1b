#pragma once

// Operator-wide settings of the Karpenter placement policy (placement.h): whether it is on,
// the NodePools replicas go to, the GPU pool's taint and where a job's replicas may spread.
// Plain values; the operator fills them from its --karpenter* flags and `coach render` from
// its own.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coach::karpenter {

// Where the replicas of one job may land relative to each other.
enum class ZonePolicy {
  kNone,       // anywhere
  kPreferred,  // one zone when Karpenter can (preferred pod affinity, weight 100)
  kRequired,   // one zone or not at all (required pod affinity)
};

// A node taint as `kubectl taint` writes it: key[=value]:Effect.
struct Taint {
  std::string key;     // empty: the pool has no taint; replicas get no toleration
  std::string value;   // may be empty
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

struct Config {
  bool enabled = false;
  // NodePool (karpenter.sh/nodepool) of replicas that request an accelerator.
  std::string gpu_nodepool = "gpu-workloads";
  // NodePool of the other replicas. Empty: anywhere but the GPU pool (clusters where CPU
  // replicas may also run on nodes Karpenter does not manage).
  std::string cpu_nodepool = "training-workloads";
  // The GPU pool's taint, which accelerator replicas tolerate.
  Taint gpu_taint = {"nvidia.com/gpu", "true", "NoSchedule"};
  ZonePolicy zone_policy = ZonePolicy::kPreferred;
};

// The settings as command-line flags spell them (the operator's and `coach render`'s).
struct ConfigFlags {
  bool enabled = false;                                      // --karpenter
  std::string gpu_nodepool = "gpu-workloads";                // --karpenter-gpu-nodepool
  std::string cpu_nodepool = "training-workloads";           // --karpenter-cpu-nodepool
  std::string gpu_taint = "nvidia.com/gpu=true:NoSchedule";  // --karpenter-gpu-taint
  std::string zone_policy = "preferred";                     // --karpenter-zone-policy
};

// The checked Config. InvalidArgument naming the flag: pools must be label values (the CPU
// pool may be empty), the taint key[=value]:Effect or empty, the zone policy a known one.
absl::StatusOr<Config> ConfigFromFlags(const ConfigFlags& flags);

// "key[=value]:Effect" -> Taint; "" -> no taint. InvalidArgument saying what is wrong.
absl::StatusOr<Taint> ParseTaint(absl::string_view text);
// "none" | "preferred" | "required". InvalidArgument otherwise.
absl::StatusOr<ZonePolicy> ParseZonePolicy(absl::string_view text);
std::string ZonePolicyName(ZonePolicy policy);

// A Kubernetes label value: at most 63 characters, alphanumerics, '-', '_' and '.', starting
// and ending with an alphanumeric. The empty string is a valid label value but never a valid
// pool, family or capacity type, so it is refused here.
bool IsLabelValue(absl::string_view value);

}  // namespace coach::karpenter
