#pragma once

// PyTorchJob Workers wait for their Master's name before they start, as upstream's
// `init-pytorch` init container does (an nslookup loop in busybox): without it a Worker that
// starts before the Master's headless Service resolves fails in init_process_group and
// crash-loops. coach runs the same wait with coach-launch from the operator's own image, so
// no third image is pulled:
//
//   initContainers += {name: init-pytorch, image: <pytorch_init_image>,
//                      command: [/usr/local/bin/coach-launch, --wait-for-host, <job>-master-0,
//                                --peer-timeout, <2 s x pytorch_init_max_tries>s],
//                      resources: upstream's (requests 50m / 10Mi, limits 100m / 20Mi)}
//
// XGBoostJob Workers race their Master the same way (Rabit resolves MASTER_ADDR once, at
// start, and fails at once when it does not resolve yet), so they get the same wait, named
// init-xgboost; upstream has none for them.
//
// Added to Worker pods of PyTorchJobs that have a Master (upstream's rule) and of XGBoostJobs when
// ReconcileConfig::pytorch_init_image is non-empty (the kube backend; the local backend runs
// no init containers and its addresses need no DNS). Not added when:
//   - the job opts out: metadata.annotations["coach.dev/wait-for-master"]: "false";
//   - the job runs behind coach-launch (coach.dev/launcher: "true"), which already waits
//     until the Master accepts connections;
//   - the template already has an init container named init-pytorch (the user's own wins).

#include "absl/status/status.h"
#include "operator/model/reconcile_types.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

inline constexpr char kAnnotationWaitForMaster[] = "coach.dev/wait-for-master";
inline constexpr char kMasterWaitContainer[] = "init-pytorch";
inline constexpr char kXGBoostMasterWaitContainer[] = "init-xgboost";
// Upstream's loop sleeps 2 s between tries.
inline constexpr int kMasterWaitSecondsPerTry = 2;

// InvalidArgument naming the annotation when it is set to anything but "true" or "false".
absl::Status ValidateWaitForMasterAnnotation(const model::Job& job);

// Appends the init container to `pod_template` when the rules above say so.
void AddMasterWait(const model::Job& job, const std::string& type,
                   const model::ReconcileConfig& config, Json& pod_template);

}  // namespace coach::reconcile
