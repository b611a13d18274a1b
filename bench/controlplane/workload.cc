#include "bench/controlplane/workload.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "bench/controlplane/installation.h"

namespace coach::bench::controlplane {
namespace {

using json = nlohmann::json;
namespace res = coach::kubeclient::resources;

json Container() {
  return {{"name", "pytorch"},
          {"image", "docker.io/pytorch/pytorch:2.3.0"},
          {"command", {"sleep", "infinity"}},
          {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}};
}

// The runtime is chosen by name: upstream's runtimePatches cannot set a pod's schedulerName.
json TrainJob(const std::string& ns, const std::string& name, int nodes, bool schedule) {
  const std::string runtime = schedule ? "torch-distributed" : "torch-distributed-unscheduled";
  return {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
          {"kind", "TrainJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"runtimeRef", {{"name", runtime}}},
            {"trainer", {{"numNodes", nodes}, {"command", {"sleep", "infinity"}}}}}}};
}

json UnrelatedPod(int i, json spec) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", absl::StrFormat("pod-%05d", i)}, {"labels", {{"app", "unrelated"}}}}},
      {"spec", std::move(spec)}};
}

}  // namespace

kubeclient::ResourceDescriptor PyTorchJobs() { return res::Kubeflow("pytorchjobs", "PyTorchJob"); }

json PyTorchJob(const std::string& ns, const std::string& name, int replicas, bool schedule) {
  json tmpl = {{"spec", {{"containers", {Container()}}}}};
  if (!schedule) tmpl["spec"]["schedulerName"] = kNoScheduler;
  json specs = {{"Master", {{"replicas", 1}, {"restartPolicy", "OnFailure"}, {"template", tmpl}}}};
  if (replicas > 1)
    specs["Worker"] = {
        {"replicas", replicas - 1}, {"restartPolicy", "OnFailure"}, {"template", tmpl}};
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "PyTorchJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"pytorchReplicaSpecs", specs}}}};
}

std::vector<Item> PyTorchJobItems(const std::string& ns, int jobs, int replicas, bool schedule) {
  std::vector<Item> items;
  for (int j = 0; j < jobs; ++j) {
    items.push_back(
        {PyTorchJobs(), PyTorchJob(ns, absl::StrFormat("job-%04d", j), replicas, schedule)});
  }
  return items;
}

std::vector<Item> TrainJobItems(const std::string& ns, int jobs, int nodes, bool schedule) {
  std::vector<Item> items;
  for (int j = 0; j < jobs; ++j) {
    items.push_back({TrainJobs(), TrainJob(ns, absl::StrFormat("job-%04d", j), nodes, schedule)});
  }
  return items;
}

void CreateUnrelated(kubeclient::KubeClient* client, const std::string& ns, int n, int threads) {
  std::vector<Item> items;
  const std::string filler(1024, 'x');
  for (int i = 0; i < n; ++i) {
    items.push_back(
        {res::ConfigMaps(),
         {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", absl::StrFormat("cm-%05d", i)}, {"labels", {{"app", "unrelated"}}}}},
          {"data", {{"blob", filler}}}}});
    items.push_back({res::Pods(), UnrelatedPod(i, {{"containers", {Container()}}})});
  }
  CreateAll(client, ns, items, threads);
}

void CreateUnrelatedPods(kubeclient::KubeClient* client, const std::string& ns, int from, int to,
                         int threads) {
  std::vector<Item> items;
  for (int i = from; i < to; ++i) {
    items.push_back({res::Pods(), UnrelatedPod(i, {{"schedulerName", kNoScheduler},
                                                   {"containers", {Container()}}})});
  }
  if (const int failed = CreateAll(client, ns, items, threads); failed > 0) {
    std::cerr << failed << " unrelated pods were not created\n";
  }
}

}  // namespace coach::bench::controlplane
