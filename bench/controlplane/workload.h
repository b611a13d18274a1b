#pragma once

// What the harness submits: PyTorchJobs and TrainJobs of sleeping replicas, and the unrelated
// ConfigMaps and Pods of the memory runs.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/controlplane/harness_client.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::bench::controlplane {

// Unless `schedule`, the pods name a scheduler that does not exist: they stay Pending and
// unbound, so neither kube-scheduler nor kwok works on them inside the measurement.
inline constexpr char kNoScheduler[] = "coach-bench-unscheduled";

// kubeflow.org/v1 PyTorchJobs.
kubeclient::ResourceDescriptor PyTorchJobs();

// A PyTorchJob of 1 Master and replicas-1 Workers.
nlohmann::json PyTorchJob(const std::string& ns, const std::string& name, int replicas,
                          bool schedule);

// `jobs` PyTorchJobs (job-0000, job-0001, ...) of `replicas` each, in ns.
std::vector<Item> PyTorchJobItems(const std::string& ns, int jobs, int replicas, bool schedule);

// `jobs` TrainJobs (job-0000, ...) of `nodes` trainer pods each, in ns, on upstream's
// torch-distributed runtime or, unless `schedule`, on bench/upstream/run.sh's copy of it whose
// pods name kNoScheduler.
std::vector<Item> TrainJobItems(const std::string& ns, int jobs, int nodes, bool schedule);

// Creates n ConfigMaps (about 1 KiB of data each) and n Pods without coach's labels in ns, on
// `threads` threads.
void CreateUnrelated(kubeclient::KubeClient* client, const std::string& ns, int n, int threads);

// Unscheduled Pods without any operator's labels, named pod-<from>..pod-<to-1>, in ns.
void CreateUnrelatedPods(kubeclient::KubeClient* client, const std::string& ns, int from, int to,
                         int threads);

}  // namespace coach::bench::controlplane
