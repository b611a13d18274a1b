#pragma once

// The Karpenter placement policy: what coach adds to a replica's pod template so that
// Karpenter provisions the right node for it and does not take that node away mid-run.
// Pure: no I/O, no clock; the same job and config always give the same pod.
//
// With the policy on (Config::enabled, or the job's coach.dev/karpenter: "true"), a replica
// that requests an accelerator (nvidia.com/gpu, amd.com/gpu or aws.amazon.com/neuron, in
// limits or requests of any container, init containers included) gets
//   - nodeSelector karpenter.sh/nodepool: <GPU pool>, and a toleration of the pool's taint;
//   - node requirements (required node affinity, ANDed into every term the user has) from
//     coach.dev/capacity-type, coach.dev/gpu-instance-family and coach.dev/gpu-name;
// every other replica (a TFJob PS, an MPI launcher, a CPU-only Master) gets
//   - nodeSelector karpenter.sh/nodepool: <CPU pool>, or, with no CPU pool configured, the
//     requirement karpenter.sh/nodepool NotIn [<GPU pool>]: never a GPU node;
//   - requirements from coach.dev/capacity-type and coach.dev/cpu-instance-family;
// and every replica gets
//   - a pod affinity on topology.kubernetes.io/zone to the job's own pods (preferred with
//     weight 100, or required; per coach.dev/zone-policy, else Config::zone_policy);
//   - the annotation karpenter.sh/do-not-disrupt: "true", from creation, so that
//     consolidation cannot evict a replica even while its init containers run.
//
// What the user wrote wins; coach only adds. A label key the template already constrains
// (in nodeSelector or in any node affinity term, required or preferred) gets nothing from
// coach; a taint key any toleration names gets no toleration; a template that already has a
// pod affinity or a topology spread on the zone key gets no zone affinity; an existing
// karpenter.sh/do-not-disrupt (even "false") stays. A field of the wrong JSON type is left
// as it is (the API server will say what is wrong with it).

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "integrations/karpenter/annotations.h"
#include "integrations/karpenter/config.h"

namespace coach::karpenter {

inline constexpr char kLabelNodePool[] = "karpenter.sh/nodepool";
inline constexpr char kLabelCapacityType[] = "karpenter.sh/capacity-type";
inline constexpr char kLabelInstanceFamily[] = "karpenter.k8s.aws/instance-family";
inline constexpr char kLabelInstanceGpuName[] = "karpenter.k8s.aws/instance-gpu-name";
inline constexpr char kLabelZone[] = "topology.kubernetes.io/zone";
inline constexpr char kAnnotationDoNotDisrupt[] = "karpenter.sh/do-not-disrupt";

// The job a replica belongs to, as far as placement needs it.
struct JobFacts {
  Annotations annotations;  // the job's metadata.annotations
  // Labels every pod of the job carries and no other job's pod does: the zone affinity's
  // selector. Empty: no zone affinity.
  std::map<std::string, std::string> pod_labels;
};

// True when a container or init container of the template requests or limits an accelerator.
bool RequestsAccelerator(const nlohmann::json& pod_template);

// Adds the placement to `pod_template` ({metadata, spec}). InvalidArgument naming the
// annotation when the job's annotations are invalid (checked even with the policy off, so
// that a job is refused or accepted the same way on every operator).
absl::Status ApplyPlacement(const Config& config, const JobFacts& job,
                            nlohmann::json& pod_template);

}  // namespace coach::karpenter
