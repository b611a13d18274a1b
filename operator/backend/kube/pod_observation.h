#pragma once

// What the kube backend keeps of a cached object and how it reads a Pod as the reconciler's
// model::ObservedPod: phase, restarts, the default container's exit code and the reason to
// show, and the recovery facts (attempt, disruption, when deletion was requested). Pure
// functions over the object's JSON. node_lost and waiting come from the backend's other
// watches (node_health.h, scheduling_facts.h).

#include <nlohmann/json.hpp>
#include <string>

#include "absl/time/time.h"
#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend::kube {

// The fields Observe and StreamLogs read (metadata, of its ownerReferences only the uids; for a
// pod also its container names, node, and status with only its PodScheduled and DisruptionTarget
// conditions), so that memory per cached object stays small.
nlohmann::json Trim(const nlohmann::json& object, bool pod);

// The kind's default container name ("pytorch", ...); "" for a kind coach does not know.
std::string DefaultContainerName(const model::Job& job);

// `pod` (a cached, trimmed Pod of `job`) as the reconciler sees it. The exit code and reason
// come from the container named `default_container`, else the first.
model::ObservedPod ToObservedPod(const model::Job& job, const nlohmann::json& pod,
                                 const std::string& default_container);

// The longest ObservedPod::disruption, in bytes (a longer message is cut, with "...").
inline constexpr size_t kMaxDisruptionLength = 200;

// Why the cluster, not the program, failed `pod` or is taking it away, as
// "<what>: <message>" (ObservedPod::disruption); "" when nothing says so. The pod's
// status.reason, which the kubelet writes, comes first:
//   Evicted                                     "evicted"  (node pressure)
//   Preempting                                  "preempted" (room for a critical pod)
//   NodeLost                                    "node lost"
//   Terminated, Shutdown, NodeShutdown          "node shutdown"
//   UnexpectedAdmissionError, OutOf<resource>,  "not admitted (<reason>)"
//   NodeAffinity, TopologyAffinityError
// then a DisruptionTarget condition with status True, by its reason:
//   PreemptionByScheduler (PreemptionByKubeScheduler before Kubernetes 1.26)  "preempted"
//   EvictionByEvictionAPI, DeletionByTaintManager                              "evicted"
//   DeletionByPodGC                                                            "node lost"
//   TerminationByKubelet                                         "terminated by the kubelet"
//   any other                                                    "disrupted (<reason>)"
// The message is the pod's status.message or the condition's, on one line; without one the
// words stand alone. At most kMaxDisruptionLength bytes.
std::string PodDisruption(const nlohmann::json& pod);

// ObservedPod::notice and notice_deadline of a Running `pod` from the pod alone: its deletion
// ("deleted: <grace> of grace", until metadata.deletionTimestamp), else a DisruptionTarget
// condition (PodDisruption's words, no deadline). A pod that is not Running has no notice.
void SetPodNotice(const nlohmann::json& pod, model::ObservedPod* observed);

// When deletion of `pod` was requested: metadata.deletionTimestamp (when the grace period
// ends) less metadata.deletionGracePeriodSeconds; InfinitePast when it has no
// deletionTimestamp (or an unreadable one).
absl::Time DeletionRequested(const nlohmann::json& pod);

}  // namespace coach::backend::kube
