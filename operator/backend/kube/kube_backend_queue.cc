// KubeBackend's watches on Kueue's Workloads and LocalQueues (queue_facts.h): started by
// Start() beside the scheduling watches, never holding it up, and only where Kueue's CRDs are
// served and RBAC lets the operator list them.

#include <spdlog/spdlog.h>

#include "operator/backend/kube/kube_backend.h"

namespace coach::backend::kube {

using nlohmann::json;

void KubeBackend::StartQueueWatches(const std::vector<std::string>& namespaces) {
  using coach::kubeclient::ResourceDescriptor;
  const auto kueue = [](const std::string& version, const char* plural, const char* kind) {
    return ResourceDescriptor{"kueue.x-k8s.io", version, plural, kind, true, true};
  };
  const auto unwatchable = [](const absl::Status& s) {
    return absl::IsNotFound(s) || absl::IsPermissionDenied(s);
  };
  // The version Kueue stores (v1beta2 from Kueue v0.15), else the one before it: the fields
  // read are the same in both. Another error (the API server busy) picks the version tried:
  // the reflectors retry as for every cache.
  std::string version;
  std::string why;
  for (const char* v : {"v1beta2", "v1beta1"}) {
    const absl::Status listed = ProbeList(kueue(v, "workloads", "Workload"), namespaces[0]);
    if (!unwatchable(listed)) {
      version = v;
      break;
    }
    if (why.empty()) why = listed.ToString();
  }
  if (version.empty()) {
    spdlog::info("kube backend: not watching workloads.kueue.x-k8s.io ({}): no Kueue facts", why);
    return;
  }
  // Each watched resource, and whether it is the Workloads (else the LocalQueues).
  std::vector<std::pair<ResourceDescriptor, bool>> watched = {
      {kueue(version, "workloads", "Workload"), true}};
  const ResourceDescriptor local_queues = kueue(version, "localqueues", "LocalQueue");
  if (const absl::Status listed = ProbeList(local_queues, namespaces[0]); unwatchable(listed)) {
    spdlog::info(
        "kube backend: not watching localqueues.kueue.x-k8s.io ({}): a waiting job names its "
        "ClusterQueue only once admitted",
        listed.ToString());
  } else {
    watched.emplace_back(local_queues, false);
  }
  spdlog::info("kube backend: watching Kueue's workloads{} (kueue.x-k8s.io/{})",
               watched.size() > 1 ? " and localqueues" : "", version);
  for (const std::string& ns : namespaces) {
    for (const auto& [resource, workloads] : watched) {
      coach::kubeclient::ReflectorOptions ro = options_.reflector;
      ro.label_selector = "";
      ro.field_selector = "";
      coach::kubeclient::ReflectorHandlers handlers;
      handlers.on_replace = [this, ns, workloads = workloads](const std::vector<json>& items,
                                                              const std::string&) {
        std::set<std::string> jobs;
        {
          absl::MutexLock lock(&mu_);
          jobs = workloads ? queues_.ReplaceWorkloads(ns, items)
                           : queues_.ReplaceLocalQueues(ns, items);
        }
        Notify(jobs);
      };
      handlers.on_event = [this,
                           workloads = workloads](const coach::kubeclient::WatchEvent& event) {
        const bool deleted = event.type == coach::kubeclient::WatchEventType::kDeleted;
        std::set<std::string> jobs;
        {
          absl::MutexLock lock(&mu_);
          jobs = workloads ? queues_.OnWorkload(event.object, deleted)
                           : queues_.OnLocalQueue(event.object, deleted);
        }
        Notify(jobs);
      };
      if (workloads)
        handlers.transform = [](json object) { return TrimWorkload(std::move(object)); };
      const std::string what = resource.GroupResource();
      handlers.on_error = [what](const absl::Status& status) {
        spdlog::warn("kube backend: {} watch: {}", what, status.ToString());
      };
      StartReflector(resource, ns, ro, std::move(handlers));
    }
  }
}

}  // namespace coach::backend::kube
