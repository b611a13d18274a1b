#pragma once

// Upstream defaulting (kubeflow training-operator v1.9.4, pkg/apis/kubeflow.org/v1
// *_defaults.go), applied the way its mutating webhook applies it before validation.

#include "api/v1/training_job.pb.h"

namespace coach::api::v1 {

// Fills every field the user left out, exactly as upstream does:
// - metadata.namespace "default" when empty (what the API server does);
// - replica-type keys normalised to CamelCase when the canonical key is free;
// - runPolicy.cleanPodPolicy "None" (MPIJob: only when spec.cleanPodPolicy is also unset,
//   and then both are set);
// - replicas 1 (MPIJob: Launcher 1, Worker 0) and the kind's restartPolicy (MPIJob: only
//   for Launcher and Worker);
// - the kind's default port ({name, containerPort}) appended to the container with the
//   default name, else container 0, unless it already has a port of that name (not for
//   MPIJob; templates without containers are left alone);
// - TFJob: successPolicy "";
// - PyTorchJob and PaddleJob with an elasticPolicy: minReplicas/maxReplicas copied from
//   each other, or both set to the Worker replicas when neither is given;
// - PyTorchJob: nprocPerNode "auto" unless set, or elasticPolicy.nProcPerNode is set.
// Idempotent: a second call changes nothing. Jobs of an unknown kind only get the
// namespace default.
void SetDefaults(TrainingJob* job);

}  // namespace coach::api::v1
