// KubeBackend's watches on Kueue's Workloads and LocalQueues (queue_facts.h): started by
// Start() beside the scheduling watches, never holding it up, and only where Kueue's CRDs are
// served and RBAC lets the operator list them.

#include <spdlog/spdlog.h>

#include "operator/backend/kube/kube_backend.h"

namespace coach::backend::kube {

using nlohmann::json;

void KubeBackend::StartQueueWatches(const std::vector<std::string>& namespaces) {
  // The version Kueue stores (v1beta2 from Kueue v0.15), else the one before it: the fields
  // read are the same in both.
  std::string version;
  std::string why;
  for (const char* v : {"v1beta2", "v1beta1"}) {
    coach::kubeclient::ListOptions probe;
    probe.limit = 1;
    absl::StatusOr<coach::kubeclient::ListResult> listed = options_.client->List(
        {"kueue.x-k8s.io", v, "workloads", "Workload", true, true}, namespaces[0], probe);
    if (listed.ok()) {
      version = v;
      break;
    }
    if (!absl::IsNotFound(listed.status()) && !absl::IsPermissionDenied(listed.status())) {
      // Another error (the API server busy): the reflectors retry as for every cache.
      version = v;
      break;
    }
    if (why.empty()) why = listed.status().ToString();
  }
  if (version.empty()) {
    spdlog::info("kube backend: not watching workloads.kueue.x-k8s.io ({}): no Kueue facts", why);
    return;
  }
  const bool local_queues_listable = [&] {
    coach::kubeclient::ListOptions probe;
    probe.limit = 1;
    absl::StatusOr<coach::kubeclient::ListResult> listed = options_.client->List(
        {"kueue.x-k8s.io", version, "localqueues", "LocalQueue", true, true}, namespaces[0], probe);
    if (absl::IsNotFound(listed.status()) || absl::IsPermissionDenied(listed.status())) {
      spdlog::info(
          "kube backend: not watching localqueues.kueue.x-k8s.io ({}): a waiting job names its "
          "ClusterQueue only once admitted",
          listed.status().ToString());
      return false;
    }
    return true;
  }();
  spdlog::info("kube backend: watching Kueue's workloads{} (kueue.x-k8s.io/{})",
               local_queues_listable ? " and localqueues" : "", version);
  for (const std::string& ns : namespaces) {
    for (const bool workloads : {true, false}) {
      if (!workloads && !local_queues_listable) continue;
      coach::kubeclient::ResourceDescriptor resource =
          workloads ? coach::kubeclient::ResourceDescriptor{"kueue.x-k8s.io", version, "workloads",
                                                            "Workload",       true,    true}
                    : coach::kubeclient::ResourceDescriptor{
                          "kueue.x-k8s.io", version, "localqueues", "LocalQueue", true, true};
      coach::kubeclient::ReflectorOptions ro = options_.reflector;
      ro.label_selector = "";
      ro.field_selector = "";
      coach::kubeclient::ReflectorHandlers handlers;
      handlers.on_replace = [this, ns, workloads](const std::vector<json>& items,
                                                  const std::string&) {
        std::set<std::string> jobs;
        {
          absl::MutexLock lock(&mu_);
          jobs = workloads ? queues_.ReplaceWorkloads(ns, items)
                           : queues_.ReplaceLocalQueues(ns, items);
        }
        Notify(jobs);
      };
      handlers.on_event = [this, workloads](const coach::kubeclient::WatchEvent& event) {
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
