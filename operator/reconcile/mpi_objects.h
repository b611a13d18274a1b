#pragma once

// MPIJob (v1) specifics, following upstream's mpijob controller: the ConfigMap
// "<job>-config" (hostfile, kubexec.sh, discover_hosts.sh), the launcher's
// ServiceAccount/Role/RoleBinding "<job>-launcher", and the launcher/worker pod
// decorations (env, volumes, kubectl-delivery init container, `sleep 365d`).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/model/kube_object.h"
#include "operator/model/reconcile_types.h"
#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {

inline constexpr char kMpiConfigVolume[] = "mpi-job-config";
inline constexpr char kMpiConfigMountPath[] = "/etc/mpi";
inline constexpr char kMpiKubectlVolume[] = "mpi-job-kubectl";
inline constexpr char kMpiKubectlMountPath[] = "/opt/kube";

// True when a launcher container's resource limits name a GPU (".com/gpu" or "gpu").
bool IsGpuLauncher(const model::Job& job);

// "<worker host> slots=<slotsPerWorker or 1>\n" per worker, the launcher first when it
// has a GPU. Hosts come from `plan`.
std::string MpiHostfile(const model::Job& job, const model::AddressPlan& plan);

// "#!/bin/sh" then "echo <host>:<slots>" per running worker (names sorted).
std::string MpiDiscoverHosts(const model::Job& job, const model::AddressPlan& plan,
                             const std::vector<int>& running_worker_indices);

// ConfigMap, ServiceAccount, Role, RoleBinding, in that order.
absl::StatusOr<std::vector<model::KubeObject>> MpiAuxObjects(
    const model::Job& job, const model::ReconcileConfig& config,
    const std::vector<int>& running_worker_indices);

// Applies the launcher's or a worker's decorations to its pod template.
absl::Status DecorateMpiPod(const ReplicaRef& replica, const model::ReconcileConfig& config,
                            model::Json& pod_template);

}  // namespace coach::reconcile
