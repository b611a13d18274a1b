#pragma once

// Where a replica of a job is reached. The reconciler asks this for every address it
// writes into a pod (MASTER_ADDR/PORT, PET_RDZV_ENDPOINT, TF_CONFIG, WORKER_ADDRS,
// COORDINATOR_ADDRESS/PORT, PADDLE_MASTER, the MPI hostfile), so that a backend which
// does not run on Kubernetes (the local process backend) can rewrite them all
// consistently.
//
// Contract for implementations:
//  - Pure and deterministic: the same arguments always give the same answer, across
//    processes and restarts (a recreated pod must see the addresses its peers saw).
//  - Thread-compatible const methods; no I/O.
//  - `replica_type` is CamelCase as the job's spec keys it ("Worker"); `index` is the
//    replica index (0-based).

#include <string>
#include <string_view>

#include "api/v1/training_job.pb.h"

namespace coach::model {

class AddressPlan {
 public:
  virtual ~AddressPlan() = default;

  // The host name peers use for the replica: on Kubernetes the headless Service's name
  // "<job>-<type lowercase>-<index>" (MPI launcher: "<job>-launcher").
  virtual std::string Host(const api::v1::TrainingJob& job, std::string_view replica_type,
                           int index) const = 0;

  // The fully qualified form, where upstream writes one (TF_CONFIG):
  // "<host>.<namespace>.svc[.<cluster domain>]" on Kubernetes.
  virtual std::string QualifiedHost(const api::v1::TrainingJob& job, std::string_view replica_type,
                                    int index) const = 0;

  // The port peers dial for the replica's `port_name` port, which the pod template
  // declares as `declared_port`. Kubernetes: `declared_port` unchanged.
  virtual int Port(const api::v1::TrainingJob& job, std::string_view replica_type, int index,
                   std::string_view port_name, int declared_port) const = 0;

  // True where a pod may name itself through the downward API (status.podIP), as
  // PaddleJob's rank 0 does upstream. A plan that returns false gets Host()/Port()
  // for every replica instead.
  virtual bool PodIPAvailable() const { return true; }

  // True where every replica runs on one host (the local backend), so that a host name cannot
  // tell a replica that it is the one an address names (torchrun's rendezvous host).
  virtual bool SharedHost() const { return false; }
};

}  // namespace coach::model
