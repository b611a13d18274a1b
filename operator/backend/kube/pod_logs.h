#pragma once

// Pod logs for KubeBackend::StreamLogs (see its contract in kube_backend.h): the job's pods,
// found by the backend (its cache, or a List when it does not lead), streamed through the
// API server's log endpoint; one after another, or concurrently when following several.

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "operator/backend/backend.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::backend::kube {

// `pods`: the job's Pods (cached or listed) in `ns`; `wanted`: the one pod's name asked for,
// "" for all. A pod's replica name is its name less "<job_name>-"; its container is the
// kind's `default_container` when the pod has several containers and one of that name, else
// the first (none named when there is one). Errors: NotFound (no pod), then StreamLogs'
// documented errors for the first pod that failed.
absl::Status StreamPodLogs(coach::kubeclient::KubeClient* client, const std::string& ns,
                           const std::string& job_name, const std::string& default_container,
                           const std::vector<nlohmann::json>& pods, const std::string& wanted,
                           const LogOptions& options, const LogSink& sink,
                           const std::atomic<bool>& cancelled);

}  // namespace coach::backend::kube
