#pragma once

// Why coach's Pending pods wait, as the cluster says it: the pod's PodScheduled condition
// (kube-scheduler), Karpenter's pod events (Nominated "Pod should schedule on: nodeclaim/X",
// FailedScheduling "Failed to schedule pod, ...") and the nominated NodeClaim's conditions.
// The kube backend feeds this from two watches (events with source=karpenter about Pods, and
// nodeclaims.karpenter.sh) and asks it about a cached pod in Observe; the facts become
// ObservedPod::waiting, which the pure reconciler words (operator/reconcile/pending.h).
// Not thread-safe: the backend holds its mutex around every call.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"

namespace coach::backend::kube {

// The field selector of the events watch: only Karpenter's events about Pods, so that the
// watch carries nothing while Karpenter has nothing to say about a pod.
inline constexpr char kKarpenterPodEventSelector[] = "involvedObject.kind=Pod,source=karpenter";

// The NodeClaim named by a Nominated event's message ("Pod should schedule on:
// nodeclaim/X" or "... nodeclaim/X, node/Y"); "" when it names none.
std::string NominatedNodeClaim(const std::string& message);
// A FailedScheduling message of Karpenter, shortened for people: without the "Failed to
// schedule pod, " prefix, the clauses of NodePools the pod's own karpenter.sh/nodepool
// selector excludes (when another clause remains) and the long requirements= lists; at most
// 400 characters.
std::string ShortKarpenterReason(const std::string& message);
// A NodeClaim's progress from its conditions: "launching", "launch failed: <message>",
// "launched, node registering", "node initializing", "node ready".
std::string NodeClaimProgress(const nlohmann::json& nodeclaim);
// The pod's nodeSelector karpenter.sh/nodepool; "" without one.
std::string PodNodePool(const nlohmann::json& pod);
// When PodScheduled turned True (the condition's lastTransitionTime, the API server's
// time); nullopt while the pod is not scheduled.
std::optional<absl::Time> ScheduledAt(const nlohmann::json& pod);

class SchedulingFacts {
 public:
  // Events (core/v1 Event JSON). Each returns the pods ("ns/name") whose facts changed.
  // ReplaceEvents: the whole list of namespace `ns` ("" all namespaces).
  std::set<std::string> ReplaceEvents(const std::string& ns,
                                      const std::vector<nlohmann::json>& events);
  std::set<std::string> OnEvent(const nlohmann::json& event, bool deleted);
  // NodeClaims (karpenter.sh/v1 JSON); returns the pods nominated to the changed ones.
  std::set<std::string> ReplaceNodeClaims(const std::vector<nlohmann::json>& nodeclaims);
  std::set<std::string> OnNodeClaim(const nlohmann::json& nodeclaim, bool deleted);

  // Why `pod` (a pod as the backend caches it: metadata, spec.nodeName, spec.nodeSelector's
  // karpenter.sh/nodepool, status.phase and conditions) waits; an empty state when it is bound
  // or not Pending, or nothing is known.
  model::ObservedPod::Waiting Explain(const nlohmann::json& pod) const;

  size_t pod_count() const { return pods_.size(); }
  size_t nodeclaim_count() const { return nodeclaims_.size(); }

 private:
  struct PodEvent {
    std::string pod_key;  // "ns/name"
    std::string reason;   // Nominated, FailedScheduling
    std::string message;
    absl::Time time;  // the event's last occurrence
  };
  struct NodeClaim {
    std::string nodepool;
    std::string progress;
  };
  // Returns the pod key when the event was taken.
  std::string Take(const nlohmann::json& event, bool deleted);
  std::set<std::string> PodsNominatedTo(const std::string& nodeclaim) const;

  std::map<std::string, PodEvent> pods_;         // by the pod's UID: a new pod of the same name
                                                 // does not inherit its predecessor's events
  std::map<std::string, NodeClaim> nodeclaims_;  // by name
};

}  // namespace coach::backend::kube
