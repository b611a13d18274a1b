#pragma once

// Which REST collection an object lives in, and the URL paths built from it.
//
//   core, namespaced:     /api/v1/namespaces/NS/PLURAL[/NAME[/SUB]]
//   grouped, namespaced:  /apis/GROUP/VERSION/namespaces/NS/PLURAL[/NAME[/SUB]]
//   cluster-scoped:       /api/v1/PLURAL[/NAME]  or  /apis/GROUP/VERSION/PLURAL[/NAME]
//   all namespaces:       a namespaced resource with an empty namespace lists/watches across them.

#include <string>

namespace coach::kubeclient {

struct ResourceDescriptor {
  std::string group;    // "" for the core group
  std::string version;  // "v1"
  std::string plural;   // "pods", "configmaps", "pytorchjobs"
  std::string kind;     // "Pod": what the fake client writes into objects and lists
  bool namespaced = true;
  // Whether the resource has a /status subresource: Update then ignores .status and
  // UpdateStatus/PatchStatus change only .status (ConfigMaps: false; Pods, CRs with
  // `subresources: {status: {}}`: true).
  bool has_status = true;

  // "v1" or "GROUP/VERSION", as objects carry it in apiVersion.
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // "/api/v1" or "/apis/GROUP/VERSION".
  std::string GroupVersionPath() const {
    return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  }
  // The collection: namespace is ignored for cluster-scoped resources; empty means all namespaces.
  std::string CollectionPath(const std::string& ns) const {
    if (namespaced && !ns.empty()) return GroupVersionPath() + "/namespaces/" + ns + "/" + plural;
    return GroupVersionPath() + "/" + plural;
  }
  std::string ObjectPath(const std::string& ns, const std::string& name,
                         const std::string& subresource = "") const {
    std::string p = CollectionPath(ns) + "/" + name;
    if (!subresource.empty()) p += "/" + subresource;
    return p;
  }
  // "pods", "pytorchjobs.kubeflow.org": the name the apiserver uses in Status details.
  std::string GroupResource() const { return group.empty() ? plural : plural + "." + group; }
};

inline bool operator==(const ResourceDescriptor& a, const ResourceDescriptor& b) {
  return a.group == b.group && a.version == b.version && a.plural == b.plural &&
         a.namespaced == b.namespaced;
}

// Resources coach touches.
namespace resources {
inline ResourceDescriptor Pods() { return {"", "v1", "pods", "Pod", true, true}; }
inline ResourceDescriptor Services() { return {"", "v1", "services", "Service", true, true}; }
inline ResourceDescriptor ConfigMaps() {
  return {"", "v1", "configmaps", "ConfigMap", true, false};
}
inline ResourceDescriptor Secrets() { return {"", "v1", "secrets", "Secret", true, false}; }
inline ResourceDescriptor Events() { return {"", "v1", "events", "Event", true, false}; }
inline ResourceDescriptor Namespaces() {
  return {"", "v1", "namespaces", "Namespace", false, true};
}
inline ResourceDescriptor Nodes() { return {"", "v1", "nodes", "Node", false, true}; }
inline ResourceDescriptor Leases() {
  return {"coordination.k8s.io", "v1", "leases", "Lease", true, false};
}
inline ResourceDescriptor CustomResourceDefinitions() {
  return {"apiextensions.k8s.io",     "v1",  "customresourcedefinitions",
          "CustomResourceDefinition", false, true};
}
inline ResourceDescriptor PodGroups() {
  return {"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true, true};
}
// kubeflow.org/v1 training jobs: PLURAL is "pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", ...
inline ResourceDescriptor Kubeflow(const std::string& plural, const std::string& kind) {
  return {"kubeflow.org", "v1", plural, kind, true, true};
}
// Trainer v2's runtimes: kind "ClusterTrainingRuntime" (cluster-scoped) or "TrainingRuntime".
inline ResourceDescriptor TrainingRuntimes(const std::string& kind) {
  const bool cluster = kind == "ClusterTrainingRuntime";
  return {"trainer.kubeflow.org",
          "v1alpha1",
          cluster ? "clustertrainingruntimes" : "trainingruntimes",
          cluster ? "ClusterTrainingRuntime" : "TrainingRuntime",
          !cluster,
          false};
}
}  // namespace resources

}  // namespace coach::kubeclient
