#pragma once

// The objects a TrainJob needs beside its pods and Service that upstream's Trainer and JobSet
// controllers make (shared/reference/kubeflow-v2.md sections 4 and 5):
// - MPI runtimes: the Secret `<trainjob>-mpi-ssh-auth` (type kubernetes.io/ssh-auth, immutable),
//   here without its data: the backend that creates it generates the key pair, so that no key
//   is ever part of a plan (`coach render` prints plans);
// - spec.template.spec.volumeClaimPolicies: one PVC `<template>-<trainjob>` per template, owned
//   by the TrainJob when its retentionPolicy says Delete (JobSet: no retentionPolicy, no owner);
// - spec.podGroupPolicy: the PodGroup named after the TrainJob (coscheduling:
//   scheduling.x-k8s.io/v1alpha1; volcano: scheduling.volcano.sh/v1beta1) with minMember = every
//   pod and minResources = their requests, and the label or annotation that ties pods to it.
// Pure.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

inline constexpr char kMpiSshAuthSecretSuffix[] = "-mpi-ssh-auth";
inline constexpr char kPodGroupLabelCoscheduling[] = "scheduling.x-k8s.io/pod-group";
inline constexpr char kPodGroupAnnotationVolcano[] = "scheduling.k8s.io/group-name";

// The Secret skeleton (no data) for `train_job_name` in `ns`, owned by `owners`.
nlohmann::json MpiSshAuthSecret(const std::string& train_job_name, const std::string& ns,
                                const nlohmann::json& owners);

// The PVCs of the merged JobSet's spec.volumeClaimPolicies (`job_set` as MergeRuntime gives it).
std::vector<nlohmann::json> VolumeClaims(const nlohmann::json& job_set,
                                         const nlohmann::json& owners);

// The PodGroup of `pod_group_policy` (the runtime's; null: none) for these pods, and the label
// or annotation added to each of them. FailedPrecondition when the policy needs a gang scheduler
// the operator does not run with (`config.gang_scheduler`): the operator neither watches nor
// may create that PodGroup, and pods tied to a group that never comes would never start.
// Nothing on the local backend (config.address_plan set), which starts a job's processes at once.
struct TrainJobGang {
  nlohmann::json pod_group;  // null: no gang scheduling
};
absl::StatusOr<TrainJobGang> GangOf(const nlohmann::json& job_set,
                                    const nlohmann::json& pod_group_policy,
                                    const model::ReconcileConfig& config,
                                    std::vector<nlohmann::json*>& pods,
                                    const nlohmann::json& owners);

}  // namespace coach::reconcile
