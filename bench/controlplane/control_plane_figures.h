#pragma once

// What the test control plane did during a run, every client's share together: the API server's
// requests by verb and resource, and the CPU of each of its processes.

#include <map>
#include <string>

#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::bench::controlplane {

// kube-apiserver's apiserver_request_total summed by "VERB resource[.group][/subresource]"
// (watches left out); empty when /metrics could not be read.
std::map<std::string, double> ApiRequests(kubeclient::RestKubeClient* client);

// "POST pods 400, POST services 400, ...": what grew from `before` to `after` by one or more,
// most first, of the resources an operator writes (pods, services, events, jobs, endpoints).
std::string RequestDelta(const std::map<std::string, double>& before,
                         const std::map<std::string, double>& after);

// CPU seconds (utime+stime) of the test control plane's processes.
struct ControlPlaneCpu {
  double apiserver = 0, etcd = 0, scheduler = 0, controller_manager = 0, kwok = 0;
};

// From the pid files that tools/testenv writes into `testenv_dir` (the kubeconfig's folder); a
// process that is not there counts 0.
ControlPlaneCpu ReadControlPlaneCpu(const std::string& testenv_dir);

ControlPlaneCpu operator-(const ControlPlaneCpu& a, const ControlPlaneCpu& b);

}  // namespace coach::bench::controlplane
