#include "bench/controlplane/speed_result.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace coach::bench::controlplane {

void PrintRoundHeading(int round, int rounds) {
  std::cout << absl::StrFormat("round %d of %d", round, rounds)
            << "                          wall       objects/s   (first POST -> every pod and "
               "service seen)\n";
}

void PrintSpeed(const std::string& label, const SpeedResult& r, double baseline_wall) {
  const double objects = static_cast<double>(r.pods + r.services);
  std::cout << absl::StrFormat("%-34s %s %8.2f s  %7.1f obj/s  submit %6.2f s", label,
                               r.ok ? "  " : "!!", r.wall_s, objects / r.wall_s, r.submit_s);
  if (baseline_wall > 0) std::cout << absl::StrFormat("  x%5.2f", r.wall_s / baseline_wall);
  if (r.hwm_kb > 0) {
    std::cout << absl::StrFormat("  cpu %5.2f s (settled %5.2f)  peak RSS %5.1f MiB", r.cpu_s,
                                 r.cpu_settled_s, r.hwm_kb / 1024.0);
  }
  std::cout << "  [" << r.pods << " pods, " << r.services << " svcs; load " << r.load << "]\n";
  std::cout << absl::StrFormat(
      "      first object %.2f s, half %.2f s, all %.2f s after the first POST", r.first_s,
      r.half_s, r.wall_s);
  if (r.end_state_s > 0)
    std::cout << absl::StrFormat(", every job's status too %.2f s", r.end_state_s);
  std::cout << absl::StrFormat(
      "; control plane CPU meanwhile: kube-apiserver %.2f s, etcd %.2f s, "
      "controller-manager %.2f s, scheduler %.2f s, kwok %.2f s\n",
      r.control_plane.apiserver, r.control_plane.etcd, r.control_plane.controller_manager,
      r.control_plane.scheduler, r.control_plane.kwok);
  if (r.passes > 0) {
    std::cout << absl::StrFormat("      operator: %.0f reconcile passes, %.1f ms each on average\n",
                                 r.passes, r.pass_mean_ms);
  }
  if (!r.requests.empty())
    std::cout << "      apiserver requests meanwhile: " << r.requests << "\n";
}

std::string MemoryFigures(const SpeedResult& r) {
  return absl::StrFormat(
      "%s peak RSS %6.1f MiB  RSS %6.1f MiB  cpu %5.2f s  ready %.2f s  [%zu pods, %zu svcs; "
      "load %s]\n",
      r.ok ? "  " : "!!", r.hwm_kb / 1024.0, r.rss_kb / 1024.0, r.cpu_settled_s, r.ready_after,
      r.pods, r.services, r.load);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

const SpeedResult* MedianRun(const std::vector<SpeedResult>& runs) {
  std::vector<const SpeedResult*> ok;
  for (const SpeedResult& r : runs) {
    if (r.ok) ok.push_back(&r);
  }
  if (ok.empty()) return nullptr;
  std::sort(ok.begin(), ok.end(),
            [](const SpeedResult* a, const SpeedResult* b) { return a->wall_s < b->wall_s; });
  return ok[(ok.size() - 1) / 2];
}

std::string EachFixed2(const std::vector<double>& values) {
  std::vector<std::string> parts;
  for (double x : values) parts.push_back(absl::StrFormat("%.2f", x));
  return absl::StrJoin(parts, " ");
}

}  // namespace coach::bench::controlplane
