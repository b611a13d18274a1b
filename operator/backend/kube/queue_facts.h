#pragma once

// Kueue's view of coach's jobs, as the cluster says it: the Workload Kueue makes for each job
// it queues (kueue.x-k8s.io Workload, owned by the job through ownerReferences: spec.queueName,
// conditions QuotaReserved/Admitted/Evicted, status.admission.clusterQueue) and the LocalQueue
// it names (spec.clusterQueue). The kube backend feeds this from two watches, taken only where
// Kueue's CRDs are served, and asks it about a job in Observe; the facts become
// ObservedState::queue, which the pure reconciler words (operator/reconcile/queue_wait.h).
// Only Workloads owned by a kubeflow.org or trainer.kubeflow.org object are kept, as facts, not
// as objects (a Workload holds whole pod templates). Not thread-safe: the backend holds its
// mutex around every call.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/model/observed_state.h"

namespace coach::backend::kube {

// What one Workload says of its owner job.
struct WorkloadFacts {
  std::string ns;
  std::string owner_kind;  // "PyTorchJob", "TrainJob"
  std::string owner_name;
  std::string owner_uid;
  std::string created;  // metadata.creationTimestamp (RFC 3339: orders as text)
  bool deleting = false;
  model::ObservedState::Queue queue;  // cluster_queue: status.admission's only
};

// The facts of a Workload (kueue.x-k8s.io v1beta1 or v1beta2 JSON: the fields read are the same
// in both); nullopt when its controller owner is not a kubeflow.org or trainer.kubeflow.org
// object, or it has no name.
std::optional<WorkloadFacts> ParseWorkload(const nlohmann::json& workload);

// A Workload reduced to what ParseWorkload reads (a listed Workload holds its pod templates):
// the reflector's transform.
nlohmann::json TrimWorkload(nlohmann::json workload);

class QueueFacts {
 public:
  // Each returns the jobs ("ns/name" of the owner) whose facts changed.
  // ReplaceWorkloads: the whole list of namespace `ns` ("" all namespaces).
  std::set<std::string> ReplaceWorkloads(const std::string& ns,
                                         const std::vector<nlohmann::json>& workloads);
  std::set<std::string> OnWorkload(const nlohmann::json& workload, bool deleted);
  std::set<std::string> ReplaceLocalQueues(const std::string& ns,
                                           const std::vector<nlohmann::json>& queues);
  std::set<std::string> OnLocalQueue(const nlohmann::json& queue, bool deleted);

  // The queue facts of the job `kind` `ns`/`name` (its uid, when given, must be the owner's):
  // from its newest Workload not being deleted (else its newest), the ClusterQueue from the
  // admission or else the LocalQueue; nullopt when it owns none.
  std::optional<model::ObservedState::Queue> Explain(const std::string& ns, const std::string& kind,
                                                     const std::string& name,
                                                     const std::string& uid) const;

  size_t workload_count() const { return workloads_.size(); }
  size_t local_queue_count() const { return local_queues_.size(); }

 private:
  std::string Take(const nlohmann::json& workload, bool deleted);
  std::set<std::string> JobsInQueue(const std::string& ns, const std::string& queue) const;

  std::map<std::string, WorkloadFacts> workloads_;   // by "ns/name" of the Workload
  std::map<std::string, std::string> local_queues_;  // "ns/name" -> spec.clusterQueue
};

}  // namespace coach::backend::kube
