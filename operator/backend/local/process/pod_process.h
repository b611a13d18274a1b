#pragma once

// Pure translation of a Pod (the exact JSON the reconciler would POST to Kubernetes)
// into what the local backend runs: the default container's argv, environment and
// working directory, and how many GPUs it asks for. No I/O.
//
// What runs, and what is documented as different from a kubelet:
//  - Only the kind's default container runs (named per kind, e.g. "pytorch"; else
//    containers[0]; MPI: containers[0]). Other containers are not run: their names come
//    back in `ignored_containers` so the caller can record a warning event.
//  - The image is ignored: the command runs with this host's filesystem and binaries.
//  - initContainers: InvalidArgument (the local backend does not run them), except the
//    operator's own MPIJob launcher "kubectl-delivery", which is meaningless locally and
//    skipped.
//  - argv = command + args, with `$(VAR)` expanded from the container's final env
//    (kube_expansion.h). No command: InvalidArgument ("the local backend runs the
//    container's command; this pod has none"). Never a shell unless the command is one.
//  - env, in the container's order: `value` (with `$(VAR)` expanded from earlier
//    entries), or `valueFrom.fieldRef` for metadata.name, metadata.namespace,
//    metadata.labels['k'], metadata.annotations['k'], status.podIP / status.hostIP
//    (the host IP given, 127.0.0.1), spec.nodeName (the host name given),
//    spec.serviceAccountName. A name given twice keeps its first position and its last
//    value (the later entry wins, as on Kubernetes). configMapKeyRef / secretKeyRef /
//    resourceFieldRef / other field paths: InvalidArgument naming the variable, unless
//    the ref says `optional: true` (then the variable is left out, as Kubernetes does
//    for an optional missing key). envFrom: InvalidArgument naming the source unless
//    it is optional (then skipped).
//  - Base environment, added after the container's (which wins): HOSTNAME (the pod
//    name, as a container sees on Kubernetes) and PATH, HOME, LANG copied from
//    `base_env` (the operator's own environment) where they are set there.
//  - workingDir: used verbatim (must be absolute, as Kubernetes requires).
//  - GPUs: resources.limits["nvidia.com/gpu"] of the container (else requests), as an
//    integer or an integer string; anything else is InvalidArgument.
//  - What execve takes: a variable ("NAME=value") or an argument longer than
//    kMaxExecString, or argv and env together over kMaxExecBytes, is InvalidArgument naming
//    it (the job then fails with that message, as a kubelet's container fails to start),
//    and `$(VAR)` expansion stops at that bound instead of building the whole string.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/kinds.h"
#include "operator/model/kube_object.h"

namespace coach::backend::local {

// Linux's MAX_ARG_STRLEN: the longest single argument or "NAME=value" execve accepts.
inline constexpr size_t kMaxExecString = 128 * 1024;
// What argv and env may hold together (strings, their NULs and pointers): Linux's ARG_MAX
// under the default 8 MiB stack limit.
inline constexpr size_t kMaxExecBytes = 2 * 1024 * 1024;

struct PodHost {
  std::string host_ip = "127.0.0.1";  // status.podIP and status.hostIP
  std::string node_name;              // spec.nodeName: this host's name
  // The operator's own environment (name -> value); PATH, HOME and LANG are copied.
  std::map<std::string, std::string> base_env;
};

struct PodProcess {
  std::string container;  // the container that runs
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // in order, names unique
  std::string working_dir;                               // empty: default
  int gpus = 0;
  std::vector<std::string> ignored_containers;
};

// Errors: InvalidArgument (everything above, with the field named).
absl::StatusOr<PodProcess> PodToProcess(const model::Json& pod, const api::v1::KindInfo& kind,
                                        const PodHost& host);

// The GPU count a container asks for (limits, else requests, "nvidia.com/gpu").
// Errors: InvalidArgument (not a non-negative integer).
absl::StatusOr<int> ContainerGpus(const model::Json& container);

// The default container of a pod spec or pod template (anything with .spec.containers);
// nullptr when there is none.
const model::Json* DefaultContainer(const model::Json& pod, const api::v1::KindInfo& kind);

// "NAME=value" entries for ProcessSpec::env.
std::vector<std::string> EnvEntries(const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace coach::backend::local
