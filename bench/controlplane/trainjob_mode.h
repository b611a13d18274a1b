#pragma once

// --only trainjob (bench/upstream/run.sh --kind trainjob): coach and upstream Trainer v2 + JobSet
// side by side on TrainJobs of upstream's torch-distributed runtime (installed by the script).
// Each runs on its own CRDs, upstream's with Trainer's and JobSet's webhooks registered while it
// runs.

#include <string>

#include "bench/controlplane/flags.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// Prints the comparison with one TRAINJOB-SUMMARY line per operator row (bench/report.sh reads
// them); f.coach_flags adds a coach row with those flags. Returns 2 when a flag the mode needs is
// missing or the CRDs could not be installed; 1 when a run failed; else 0.
int CompareTrainJobs(const Flags& f, kubeclient::RestKubeClient* client, const std::string& run_id);

}  // namespace coach::bench::controlplane
