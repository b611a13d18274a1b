#pragma once

// Which nodes are lost, and which are about to go (NodeDisruptionNotice), as the kube backend's
// watch on Nodes shows them: a node is lost when
// its Ready condition is False or Unknown (the kubelet stopped reporting, or reports it
// broken), or when it was deleted while the watch ran. A pod bound to a lost node will not run
// there again (ObservedPod::node_lost).
//
// A node the watch never saw is not lost: a pod can be bound to a node that is newer than this
// cache, and a node deleted before the operator started leaves pods that the pod garbage
// collector deletes (with DisruptionTarget DeletionByPodGC, which PodDisruption words). A node
// without a Ready condition yet (registering) is not lost either.
//
// Not thread-safe: the backend holds its mutex around every call.

#include <cstddef>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace coach::backend::kube {

// The deleted nodes NodeHealth remembers (the most recent): pods of a deleted node are gone
// within a minute or so (pod GC), so this bounds memory without forgetting a node in time.
inline constexpr size_t kMaxDeletedNodes = 4096;

// True when `node` (core/v1 Node JSON) has a Ready condition whose status is not True.
bool NodeNotReady(const nlohmann::json& node);

// Why `node` is about to go away, from the taint its remover puts on it first; "" when none says
// so (ObservedPod::notice words it for the pods on the node):
//   karpenter.sh/disrupted               "Karpenter is disrupting node <name>" (a spot
//                                        interruption, consolidation, drift, expiry, or its
//                                        NodeClaim being deleted)
//   ToBeDeletedByClusterAutoscaler       "the cluster autoscaler is removing node <name>"
// A cordon alone (spec.unschedulable) is not a notice: maintenance cordons nodes for days.
std::string NodeDisruptionNotice(const nlohmann::json& node);

// What NodeHealth reads of a Node: its name, Ready condition and the taints of
// NodeDisruptionNotice (a whole Node, with its image list, is tens of kilobytes).
nlohmann::json TrimNode(const nlohmann::json& node);

class NodeHealth {
 public:
  // The whole list (the watch's first list, or a re-list): a node known before and missing
  // from the list was deleted. Returns the names whose Lost() or Notice() changed.
  std::set<std::string> Replace(const std::vector<nlohmann::json>& nodes);
  // One watch event. Returns the names whose Lost() or Notice() changed (at most the node's
  // own).
  std::set<std::string> OnNode(const nlohmann::json& node, bool deleted);

  // Whether `node` is lost; false for "" (not bound) and for a node never seen.
  bool Lost(const std::string& node) const;
  // NodeDisruptionNotice of the live `node`; "" for a node not seen (or deleted: Lost).
  std::string Notice(const std::string& node) const;

  size_t node_count() const { return not_ready_.size(); }

 private:
  void Forget(const std::string& node);  // a node seen deleted
  void Remember(const std::string& node, bool not_ready, std::string notice);

  std::map<std::string, bool> not_ready_;       // live nodes: name -> NodeNotReady
  std::map<std::string, std::string> notices_;  // live nodes with a NodeDisruptionNotice
  std::set<std::string> deleted_;
  std::deque<std::string> deleted_order_;  // oldest first, to bound deleted_
};

}  // namespace coach::backend::kube
