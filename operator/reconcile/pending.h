#pragma once

// Pending explained: the words for replicas that wait for a node, from the facts a backend
// observed (model::ObservedPod::waiting). Pure. The reconciler puts the report into the
// message of the job's Created condition (what `coach get` and `coach describe` show) and
// records it as a job event whenever it changes, so that repeats of the same facts add
// nothing.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/model/observed_state.h"

namespace coach::reconcile {

// One replica's facts in words; "" when it does not wait:
//   provisioning: "NodeClaim gpu-workloads-abcde launching (NodePool gpu-workloads)"
//   Karpenter:    "Karpenter: no instance type has enough resources, resources={...}
//                  (NodePool gpu-workloads)"
//   scheduler:    "Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
std::string WaitingText(const model::ObservedPod::Waiting& waiting);

struct PendingReport {
  // Warning "Unschedulable" when Karpenter (or, without Karpenter, kube-scheduler) finds no
  // place for a replica; Normal "WaitingForCapacity" while capacity is on its way (a NodeClaim
  // launching, or with Karpenter on, the scheduler's first refusal before Karpenter decides).
  std::string type;
  std::string reason;
  // Replicas with the same words share one clause, in the pods' order:
  // "Worker-0, Worker-1: NodeClaim gpu-workloads-abcde launching (NodePool gpu-workloads)".
  // At most 1000 characters.
  std::string message;
  // The distinct texts (WaitingText) of the waiting replicas, whichever replicas they name.
  std::set<std::string> texts;
};

// The report on `pods`' waiting replicas (Pending, not deleting, with facts); nullopt when none
// waits. `karpenter`: the operator places replicas for Karpenter.
std::optional<PendingReport> ReportPending(const std::vector<model::ObservedPod>& pods,
                                           bool karpenter);

// The texts of a message ReportPending wrote (its clauses without the replica names); empty for
// any other message. The reconciler records an event only for a report with a new text, not
// when one more replica reaches a state that others are already reported in (replicas of one
// job move through the same states a moment apart).
std::set<std::string> PendingTexts(const std::string& message);

}  // namespace coach::reconcile
