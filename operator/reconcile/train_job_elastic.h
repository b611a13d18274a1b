#pragma once

// What an elastic torchrun needs in a TrainJob's node pods (coach.dev/elastic-min-nodes,
// elastic.h), on the pods torch's rules made (operator/trainer/framework_env.cc), as an elastic
// PyTorchJob's Workers get it (pytorch_env.cc). In each container that torch's rules gave
// PET_NNODES:
//   PET_NNODES          min:max (replacing numNodes)
//   PET_RDZV_BACKEND    c10d
//   PET_RDZV_ENDPOINT   the rendezvous on node 0: the container's PET_MASTER_ADDR:PET_MASTER_PORT
//                       (node 0's stable host name and port 29500; the local backend's address),
//                       which are then dropped: torchrun reads them only for a static rendezvous
//   PET_RDZV_ID         the TrainJob's uid (its name when it has none)
//   PET_MAX_RESTARTS    kElasticNodeMaxRestarts
//   TORCH_DISABLE_SHARE_RDZV_TCP_STORE  1
//   PET_RDZV_CONF       is_host=true on node 0, false elsewhere, only where every pod shares one
//                       host (model::AddressPlan::SharedHost)
// Every one but PET_NNODES and the endpoint only where the container does not set it (the
// TrainJob's spec.trainer.env may). Pure.

#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"
#include "operator/reconcile/elastic.h"

namespace coach::reconcile {

// The restarts each node's torchrun agent may make of its ranks. A lost node makes the ranks
// of every other fail, and an agent with no restart left then ends its pod: torchrun's own
// default (0, what upstream leaves a PyTorchJob without elasticPolicy.maxRestarts) would turn
// one lost node into the loss of all. 3 is what torchrun's elastic examples and coach's elastic
// PyTorchJob examples use; a node joining costs none.
inline constexpr int kElasticNodeMaxRestarts = 3;

// Wires node pod `index` of `job` (the TrainJob as its plan expands it) for `range`;
// `shared_host` as the backend's address plan says.
void SetElasticNodeEnv(const model::Job& job, const ElasticRange& range, int index,
                       bool shared_host, model::Json& pod_template);

}  // namespace coach::reconcile
