#pragma once

// The per-job annotations of the Karpenter placement policy (validated at admission; the
// error names the annotation as "metadata.annotations[<name>]: ..."):
//
//   coach.dev/karpenter              "true" | "false": this job is placed (or not) whatever the
//                                    operator's --karpenter says
//   coach.dev/capacity-type          comma list of spot, on-demand, reserved
//                                    -> karpenter.sh/capacity-type In (every replica)
//   coach.dev/gpu-instance-family    comma list, e.g. "g5,g4dn"
//                                    -> karpenter.k8s.aws/instance-family In (accelerator replicas)
//   coach.dev/gpu-name               comma list, e.g. "a10g,t4"
//                                    -> karpenter.k8s.aws/instance-gpu-name In (accelerator
//                                    replicas)
//   coach.dev/cpu-instance-family    comma list, e.g. "c5,m5"
//                                    -> karpenter.k8s.aws/instance-family In (the other replicas)
//   coach.dev/zone-policy            none | preferred | required: whether the job's replicas are
//                                    kept in one zone (default: the operator's)
//   coach.dev/on-demand-after        an integer N in 1..100: once the job has been interrupted
//                                    N times (spot reclaims, evictions, lost nodes), its
//                                    replacement pods go to on-demand capacity (see placement.h)
//
// Families and GPU names apply per replica kind because one job may mix both: a g5 family
// asked for the GPU Workers must not pin the CPU-only PS or launcher to g5 nodes.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/karpenter/config.h"

namespace coach::karpenter {

inline constexpr char kAnnotationKarpenter[] = "coach.dev/karpenter";
inline constexpr char kAnnotationCapacityType[] = "coach.dev/capacity-type";
inline constexpr char kAnnotationGpuInstanceFamily[] = "coach.dev/gpu-instance-family";
inline constexpr char kAnnotationGpuName[] = "coach.dev/gpu-name";
inline constexpr char kAnnotationCpuInstanceFamily[] = "coach.dev/cpu-instance-family";
inline constexpr char kAnnotationZonePolicy[] = "coach.dev/zone-policy";
inline constexpr char kAnnotationOnDemandAfter[] = "coach.dev/on-demand-after";

using Annotations = std::map<std::string, std::string>;

// What a job's annotations ask for; empty lists and nullopt: nothing asked.
struct JobOptions {
  std::optional<bool> enabled;
  std::vector<std::string> capacity_types;
  std::vector<std::string> gpu_instance_families;
  std::vector<std::string> gpu_names;
  std::vector<std::string> cpu_instance_families;
  std::optional<ZonePolicy> zone_policy;
  std::optional<int> on_demand_after;  // 1..100
};

// The job's options. InvalidArgument naming the first bad annotation (in the order above).
// Annotations outside this list are ignored.
absl::StatusOr<JobOptions> ParseJobOptions(const Annotations& annotations);

}  // namespace coach::karpenter
