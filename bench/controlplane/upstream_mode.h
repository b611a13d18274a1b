#pragma once

// --only upstream (bench/upstream/run.sh): coach and the upstream Training Operator side by side
// on PyTorchJobs, then the memory of both with more and more unrelated pods in the cluster.

#include <string>

#include "bench/controlplane/flags.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// Prints the comparison, then one UPSTREAM-SUMMARY line per figure (bench/report.sh reads them).
// Returns 2 when a flag the mode needs is missing or wrong, or the CRDs could not be installed;
// 1 when a run failed; else 0.
int CompareWithUpstream(const Flags& f, kubeclient::RestKubeClient* client,
                        const std::string& run_id);

}  // namespace coach::bench::controlplane
