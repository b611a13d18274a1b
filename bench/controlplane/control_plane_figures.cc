#include "bench/controlplane/control_plane_figures.h"

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/local/bench_util.h"

namespace coach::bench::controlplane {

namespace k8s = coach::kubeclient;

std::map<std::string, double> ApiRequests(k8s::RestKubeClient* client) {
  std::map<std::string, double> out;
  k8s::HttpRequest req;
  req.path = "/metrics";
  auto r = client->Do(req);
  if (!r.ok()) return out;
  std::istringstream in(r->body);
  std::string line;
  auto label = [](const std::string& l, const std::string& name) {
    const std::string key = name + "=\"";
    size_t at = l.find("," + key);
    if (at == std::string::npos) at = l.find("{" + key);
    if (at == std::string::npos) return std::string();
    at += key.size() + 1;
    return l.substr(at, l.find('"', at) - at);
  };
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "apiserver_request_total{")) continue;
    const std::string verb = label(line, "verb");
    if (verb == "WATCH") continue;
    std::string what = absl::StrCat(verb, " ", label(line, "resource"));
    const std::string group = label(line, "group");
    if (!group.empty()) what = absl::StrCat(verb, " ", label(line, "resource"), ".", group);
    const std::string sub = label(line, "subresource");
    if (!sub.empty()) absl::StrAppend(&what, "/", sub);
    out[what] += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return out;
}

std::string RequestDelta(const std::map<std::string, double>& before,
                         const std::map<std::string, double>& after) {
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    const double d = v - (it == before.end() ? 0 : it->second);
    if (d >= 1 && (absl::StrContains(k, "pods") || absl::StrContains(k, "services") ||
                   absl::StrContains(k, "events") || absl::StrContains(k, "jobs") ||
                   absl::StrContains(k, "endpoint"))) {
      rows.push_back({d, k});
    }
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string s;
  for (const auto& [d, k] : rows)
    absl::StrAppend(&s, s.empty() ? "" : ", ", k, " ", static_cast<int64_t>(d));
  return s;
}

ControlPlaneCpu ReadControlPlaneCpu(const std::string& testenv_dir) {
  ControlPlaneCpu c;
  for (const char* name :
       {"kube-apiserver", "etcd", "kube-scheduler", "kube-controller-manager", "kwok"}) {
    std::ifstream in(absl::StrCat(testenv_dir, "/pids/", name));
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    // A process that is gone counts 0 rather than failing the run.
    const double cpu = ReadProcUsage(pid).value_or(ProcUsage{}).cpu_seconds;
    const std::string n = name;
    (n == "kube-apiserver"   ? c.apiserver
     : n == "etcd"           ? c.etcd
     : n == "kube-scheduler" ? c.scheduler
     : n == "kwok"           ? c.kwok
                             : c.controller_manager) += cpu;
  }
  return c;
}

ControlPlaneCpu operator-(const ControlPlaneCpu& a, const ControlPlaneCpu& b) {
  return {a.apiserver - b.apiserver, a.etcd - b.etcd, a.scheduler - b.scheduler,
          a.controller_manager - b.controller_manager, a.kwok - b.kwok};
}

}  // namespace coach::bench::controlplane
