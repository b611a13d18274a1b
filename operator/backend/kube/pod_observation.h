#pragma once

// What the kube backend keeps of a cached object and how it reads a Pod as the reconciler's
// model::ObservedPod: phase, restarts, the default container's exit code and the reason to
// show. Pure functions over the object's JSON.

#include <nlohmann/json.hpp>
#include <string>

#include "operator/model/observed_state.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend::kube {

// The fields Observe and StreamLogs read (metadata; for a pod also its container names and
// status), so that memory per cached object stays small.
nlohmann::json Trim(const nlohmann::json& object, bool pod);

// The kind's default container name ("pytorch", ...); "" for a kind coach does not know.
std::string DefaultContainerName(const model::Job& job);

// `pod` (a cached, trimmed Pod of `job`) as the reconciler sees it. The exit code and reason
// come from the container named `default_container`, else the first.
model::ObservedPod ToObservedPod(const model::Job& job, const nlohmann::json& pod,
                                 const std::string& default_container);

}  // namespace coach::backend::kube
