#pragma once

// --only memory (and the second part of a run without --only): peak RSS of a fresh coach at its
// defaults that owns (a) --memory-jobs jobs on an otherwise empty cluster, (c) --unrelated pods'
// worth of jobs itself (U/R jobs of R replicas: U pods + U services), (b) --memory-jobs jobs on a
// cluster holding --unrelated ConfigMaps and as many Pods without coach's labels (created before
// the operator starts).

#include <string>

#include "bench/controlplane/flags.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// Prints one line per run ("(a) ...", read by bench/report_lib.py). Returns 1 when a run failed,
// else 0.
int MeasureMemory(const Flags& f, kubeclient::RestKubeClient* client, const std::string& run_id);

}  // namespace coach::bench::controlplane
