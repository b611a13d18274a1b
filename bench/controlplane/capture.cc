#include "bench/controlplane/capture.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/match.h"
#include "bench/controlplane/workload.h"

namespace coach::bench::controlplane {

using json = nlohmann::json;
namespace res = coach::kubeclient::resources;

json Recreatable(const json& obj) {
  json out = {{"apiVersion", obj["apiVersion"]}, {"kind", obj["kind"]}};
  json meta = json::object();
  meta["name"] = obj["metadata"]["name"];
  for (const char* k : {"labels", "annotations"}) {
    if (obj["metadata"].contains(k)) meta[k] = obj["metadata"][k];
  }
  out["metadata"] = meta;
  json spec = obj["spec"];
  if (obj["kind"] == "Pod") {
    spec.erase("nodeName");
    spec.erase("priority");
    if (spec.contains("volumes")) {
      json vols = json::array();
      for (const auto& v : spec["volumes"]) {
        if (!absl::StartsWith(v.value("name", ""), "kube-api-access-")) vols.push_back(v);
      }
      spec["volumes"] = vols;
    }
    for (auto& c : spec["containers"]) {
      if (!c.contains("volumeMounts")) continue;
      json mounts = json::array();
      for (const auto& m : c["volumeMounts"]) {
        if (!absl::StartsWith(m.value("name", ""), "kube-api-access-")) mounts.push_back(m);
      }
      c["volumeMounts"] = mounts;
    }
  } else if (spec.value("clusterIP", "") != "None") {
    spec.erase("clusterIP");
    spec.erase("clusterIPs");
  }
  out["spec"] = spec;
  return out;
}

std::vector<Item> Capture(kubeclient::KubeClient* client, const std::string& ns) {
  std::vector<Item> items;
  for (const auto& r : {res::Pods(), res::Services()}) {
    auto list = ListAllPages(client, r, ns);
    if (!list.ok()) {
      std::cerr << "list " << r.plural << ": " << list.status() << "\n";
      continue;
    }
    for (const auto& o : *list) {
      json copy = o;
      copy["apiVersion"] = "v1";
      copy["kind"] = r.kind;
      items.push_back({r, Recreatable(copy)});
    }
  }
  // Job by job, as the operator makes them: listed pods-then-services, the services would come
  // last and the controller-manager's reaction to them (Endpoints, EndpointSlices: a write each)
  // would fall after the baseline's clock stopped, while in coach's run it falls inside.
  auto job_of = [](const Item& it) {
    return it.body["metadata"]
        .value("labels", json::object())
        .value("training.kubeflow.org/job-name", "");
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Item& a, const Item& b) { return job_of(a) < job_of(b); });
  const auto jobs = PyTorchJobs();
  auto list = ListAllPages(client, jobs, ns);
  if (list.ok()) {
    for (const auto& o : *list) {
      if (o.contains("status"))
        items.push_back(
            {jobs, {{"metadata", {{"name", o["metadata"]["name"]}}}, {"status", o["status"]}}});
    }
  }
  return items;
}

}  // namespace coach::bench::controlplane
