#pragma once

// --only speed (and the first part of a run without --only): coach against the floor. N
// PyTorchJobs (1 Master + R-1 Workers) POSTed at once by the harness, timed until a watch saw
// every pod and headless service (N*R each). In the same round, the floors: the pods and
// services coach made, captured and POSTed into a fresh namespace by the tight client; and the
// same end state (the jobs, their owned objects, their statuses). Coach runs at its defaults
// (--kube-api-qps auto, lifted once the server shows API Priority and Fairness; Events on their
// own --kube-event-qps budget) and, unless --compare-qps 0, with upstream's fixed client-side
// limit (--kube-api-qps 20 --kube-api-burst 30).

#include <string>

#include "bench/controlplane/flags.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// Prints each round's runs and the median ratios ("coach/baseline, median of ..." is read by
// bench/report_lib.py). Returns 1 when a round's coach or floor run failed, else 0.
int CompareWithFloor(const Flags& f, kubeclient::RestKubeClient* client, const std::string& run_id);

}  // namespace coach::bench::controlplane
