#pragma once

// Which named ports the pods of a job listen on for their peers: what a backend without a pod
// network (the local backend) reserves a port for, so that every address the plan writes into a
// replica's environment (MASTER_PORT, TF_CONFIG, PET_MASTER_PORT, ...) is one a replica can bind.

#include <map>
#include <string>
#include <vector>

#include "operator/model/reconcile_types.h"

namespace coach::model {

// The trainer's replicated job wherever no plan says which: every shipped runtime's name.
inline constexpr char kTrainerReplicatedJob[] = "node";
// A TrainJob's rendezvous port on a backend without a pod network: reserved under this name for
// the trainer's first pod, and what PET_MASTER_PORT & co. become there.
inline constexpr char kTrainerPortName[] = "trainer";

// Pod name -> sorted port names. A kubeflow.org/v1 job: every replica, each named port its type's
// default container declares plus the kind's wiring port (pytorchjob-port, tfjob-port,
// xgboostjob-port, master (Paddle), jaxjob-port), declared or not; an unparseable template
// contributes the wiring port only. A TrainJob: the trainer's first pod, which is the rendezvous
// (PET_MASTER_ADDR, JAX's coordinator, XGBoost's tracker), one port.
std::map<std::string, std::vector<std::string>> ListenPortsByPod(const Job& job);

}  // namespace coach::model
