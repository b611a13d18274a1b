#pragma once

// The floor an operator is measured against: the tight parallel client (--client-threads
// threads, no client-side rate limit: the API server's own) creating what coach's run created,
// timed the same way (a watch saw them all).

#include <string>
#include <vector>

#include "bench/controlplane/flags.h"
#include "bench/controlplane/harness_client.h"
#include "bench/controlplane/speed_result.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// `items` as Capture made them, created in the fresh namespace ns (deleted afterwards). With
// `with_jobs`, the end state coach reaches (Events aside): the same PyTorchJobs POSTed first,
// then their pods and services owned by them (ownerReferences to the new uids, as coach sets
// them), then each job's status as coach wrote it (PUT /status), all inside the measurement;
// else the pods and services only.
SpeedResult RunBaseline(const Flags& f, kubeclient::RestKubeClient* client, const std::string& ns,
                        std::vector<Item> items, bool with_jobs);

}  // namespace coach::bench::controlplane
