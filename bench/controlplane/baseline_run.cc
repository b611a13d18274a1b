#include "bench/controlplane/baseline_run.h"

#include <atomic>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "bench/controlplane/timed_run.h"
#include "bench/controlplane/watch_counter.h"
#include "bench/controlplane/workload.h"

namespace coach::bench::controlplane {
namespace {

using json = nlohmann::json;

// Makes each pod and service owned by the new job its job-name label names, as coach does.
void OwnBy(const std::vector<json>& jobs, std::vector<Item>* items) {
  std::map<std::string, std::string> uid_of;
  for (const json& j : jobs) {
    if (j.is_object()) uid_of[j["metadata"].value("name", "")] = j["metadata"].value("uid", "");
  }
  for (Item& it : *items) {
    const std::string owner =
        it.body["metadata"]["labels"].value("training.kubeflow.org/job-name", "");
    it.body["metadata"]["ownerReferences"] = {{{"apiVersion", "kubeflow.org/v1"},
                                               {"kind", "PyTorchJob"},
                                               {"name", owner},
                                               {"uid", uid_of[owner]},
                                               {"controller", true},
                                               {"blockOwnerDeletion", true}}};
  }
}

// Each job's status as coach wrote it (conditions, replicaStatuses): the same end state.
// Returns the number of writes that failed.
int WriteStatuses(kubeclient::KubeClient* client, const std::string& ns,
                  const std::vector<json>& jobs, const std::vector<Item>& statuses, int threads) {
  std::map<std::string, const json*> job_by_name;
  for (const json& j : jobs) {
    if (j.is_object()) job_by_name[j["metadata"].value("name", "")] = &j;
  }
  std::atomic<int> failed{0};
  ParallelFor(statuses.size(), threads, [&](size_t i) {
    const Item& status = statuses[i];
    auto it = job_by_name.find(status.body["metadata"].value("name", ""));
    if (it == job_by_name.end()) return;
    json object = *it->second;
    object["status"] = status.body["status"];
    if (!client->UpdateStatus(status.resource, ns, object).ok()) ++failed;
  });
  return failed.load();
}

}  // namespace

SpeedResult RunBaseline(const Flags& f, kubeclient::RestKubeClient* client, const std::string& ns,
                        std::vector<Item> items, bool with_jobs) {
  SpeedResult r;
  if (auto s = CreateNamespace(client, ns); !s.ok()) {
    std::cerr << "namespace " << ns << ": " << s << "\n";
    return r;
  }
  std::vector<Item> statuses_to_write;
  for (auto it = items.begin(); it != items.end();) {
    if (it->resource.plural == "pytorchjobs") {
      statuses_to_write.push_back(std::move(*it));
      it = items.erase(it);
    } else {
      ++it;
    }
  }
  size_t npods = 0, nsvcs = 0;
  for (auto& it : items) {
    (it.resource.plural == "pods" ? npods : nsvcs)++;
  }
  {
    TimedRun run(client, TestenvDir(f), ns, npods, nsvcs, PyTorchJobs(), statuses_to_write.size());
    std::vector<json> jobs;
    const double t0 = run.Start();
    int failed = 0;
    if (with_jobs) {
      failed += CreateAll(client, ns, PyTorchJobItems(ns, f.jobs, f.replicas, f.schedule),
                          f.client_threads, &jobs);
      OwnBy(jobs, &items);
    }
    failed += CreateAll(client, ns, items, f.client_threads);
    if (with_jobs) failed += WriteStatuses(client, ns, jobs, statuses_to_write, f.client_threads);
    r.submit_s = NowS() - t0;
    if (failed > 0) std::cerr << failed << " baseline POSTs failed\n";
    const double deadline = t0 + f.timeout_s;
    const bool ok = run.WaitForObjects(deadline);
    if (with_jobs && ok) run.WaitForStatuses(deadline);
    run.Finish(ok, &r);
  }
  DeleteNamespace(client, ns);
  return r;
}

}  // namespace coach::bench::controlplane
