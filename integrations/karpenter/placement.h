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
//
// The one exception, where coach overrides what the user wrote: coach.dev/on-demand-after:
// "N". Once the job has been interrupted N times (JobFacts::interruptions), its replacement
// pods go to on-demand capacity, with the policy on or off: the job asked for exactly that,
// and a capacity type the template still asks for (spot, most likely the very cause of the
// interruptions) would keep the pod off on-demand nodes. So every constraint on
// karpenter.sh/capacity-type goes: the nodeSelector entry, and the expressions on it in
// required and preferred node affinity terms. A term left with nothing in it admits every
// node, so a required one takes the whole (ORed) requirement with it, rather than staying as
// an empty term, which Kubernetes reads as matching no node; a preferred one just goes.
// coach.dev/capacity-type is not applied, and the pod gets nodeSelector
// karpenter.sh/capacity-type: on-demand. The rest of the placement is as above, decided
// against the template so rewritten.

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
  // How many times the job has been interrupted so far (spot reclaims, evictions, lost nodes),
  // counted by the caller: compared against coach.dev/on-demand-after.
  int interruptions = 0;
};

// Whether the job's replacement pods go to on-demand capacity: coach.dev/on-demand-after is
// set and the job has been interrupted at least that many times.
bool GoesOnDemand(const JobOptions& options, int interruptions);

// True when a container or init container of the template requests or limits an accelerator.
bool RequestsAccelerator(const nlohmann::json& pod_template);

// Adds the placement to `pod_template` ({metadata, spec}). InvalidArgument naming the
// annotation when the job's annotations are invalid (checked even with the policy off, so
// that a job is refused or accepted the same way on every operator).
absl::Status ApplyPlacement(const Config& config, const JobFacts& job,
                            nlohmann::json& pod_template);

}  // namespace coach::karpenter
