#pragma once

// What coach's run left in its namespace, as bodies the floor can create again in a fresh one:
// the baseline POSTs exactly the objects the operator made.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/controlplane/harness_client.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::bench::controlplane {

// A created object -> the body to create it again elsewhere: metadata name/labels/annotations,
// the spec without what the server or its controllers filled in (nodeName, clusterIP,
// priority, the service-account token volume); no ownerReferences (the owner is gone).
nlohmann::json Recreatable(const nlohmann::json& obj);

// The pods and services of a namespace as create bodies, ordered job by job, then its
// PyTorchJobs' statuses (items of resource pytorchjobs whose body is {metadata.name, status}).
// A list that fails is printed and left out.
std::vector<Item> Capture(kubeclient::KubeClient* client, const std::string& ns);

}  // namespace coach::bench::controlplane
