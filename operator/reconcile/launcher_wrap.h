#pragma once

// coach-launch in a job's replicas, opt in per job:
//
//   metadata.annotations["coach.dev/launcher"]: "true" | "false"   (validated at admission)
//
// With "true" the default container of every replica runs its command behind coach-launch
// (launcher/README.md), which waits for its peers (a real readiness wait, where upstream has
// an nslookup init container) and reads upstream's env unchanged. `args` are left alone:
// Kubernetes appends them to the command.
//
// ReconcileConfig::launcher_image non-empty (the kube backend; the operator's own image, whose
// /usr/local/bin/coach-launch bundles itself with `--install`):
//   volumes        += {name: coach-launch, emptyDir: {}}
//   initContainers += {name: coach-launch-install, image: <launcher_image>,
//                      command: [/usr/local/bin/coach-launch, --install, /coach],
//                      volumeMounts: [{name: coach-launch, mountPath: /coach}]}
//   default container: volumeMounts += {name: coach-launch, mountPath: /coach, readOnly: true}
//                      command = [/coach/lib/ld.so, --library-path, /coach/lib,
//                                 /coach/bin/coach-launch, --] + command
// The bundled loader and libraries run coach-launch whatever the user's image has (no shell
// needed); the workers it starts get the image's own environment.
// Empty launcher_image (the local backend, which runs no init containers):
//   command = [coach-launch, --] + command   (coach-launch from the replica's PATH)

#include "absl/status/status.h"
#include "operator/model/reconcile_types.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

inline constexpr char kAnnotationLauncher[] = "coach.dev/launcher";
inline constexpr char kLauncherVolume[] = "coach-launch";
inline constexpr char kLauncherInitContainer[] = "coach-launch-install";
inline constexpr char kLauncherImagePath[] = "/usr/local/bin/coach-launch";
inline constexpr char kLauncherMountPath[] = "/coach";

// True when the job has coach.dev/launcher: "true".
bool LauncherEnabled(const model::Job& job);

// InvalidArgument naming the annotation when its value is not "true"/"false", or, when "true",
// naming spec.<replicaSpecs>.<Type>.template.spec.containers[i].command of the first replica
// whose default container has no command.
absl::Status ValidateLauncherAnnotation(const model::Job& job);

// Wraps the default container of a replica's pod template as above when the job opts in;
// leaves the template untouched otherwise (or when it has no containers).
void WrapWithLauncher(const model::Job& job, const model::ReconcileConfig& config,
                      Json& pod_template);

}  // namespace coach::reconcile
