#include "bench/controlplane/upstream_mode.h"

#include <iostream>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/controlplane/harness_client.h"
#include "bench/controlplane/installation.h"
#include "bench/controlplane/operator_run.h"
#include "bench/controlplane/side_by_side.h"
#include "bench/controlplane/speed_result.h"
#include "bench/controlplane/watch_counter.h"
#include "bench/controlplane/workload.h"
#include "bench/local/bench_util.h"

namespace coach::bench::controlplane {
namespace {

// "0,2000,10000" -> {0, 2000, 10000}: ascending, each >= 0.
absl::StatusOr<std::vector<int>> ParseLevels(const std::string& text) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 0 || (!out.empty() && n < out.back())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--unrelated-pods: \"", text, "\" is not an ascending list of pod counts (0,2000,...)"));
    }
    out.push_back(n);
  }
  if (out.empty()) return absl::InvalidArgumentError("--unrelated-pods is empty");
  return out;
}

// The memory part: a fresh operator of each kind at its defaults owning f.memory_jobs jobs, at
// each level of unrelated pods (created between the levels, kept until the end). False when the
// namespace of the unrelated pods could not be made (printed); *rc = 1 when a run failed.
bool CompareMemory(const Flags& f, kubeclient::RestKubeClient* client, Installation* installation,
                   const std::string& run_id, const std::vector<int>& levels,
                   std::vector<std::string>* summaries, int* rc) {
  std::cout << absl::StrFormat(
      "\nmemory: peak RSS (VmHWM) of a fresh operator at its defaults owning %d jobs x %d, "
      "%.0f s after its last object, with unrelated Pods (unscheduled, no operator's labels) "
      "in the cluster\n",
      f.memory_jobs, f.replicas, f.settle_s);
  const std::string unrelated_ns = "cp-unrelated-" + run_id;
  if (auto s = CreateNamespace(client, unrelated_ns); !s.ok()) {
    std::cerr << "namespace " << unrelated_ns << ": " << s << "\n";
    return false;
  }
  struct MemoryRow {
    int pods;
    SpeedResult coach, upstream;
  };
  std::vector<MemoryRow> memory;
  int have = 0;
  for (const int level : levels) {
    const double t0 = NowS();
    CreateUnrelatedPods(client, unrelated_ns, have, level, f.client_threads);
    if (level > have) {
      std::cout << absl::StrFormat("  %d unrelated pods created in %.1f s (now %d) [load %s]\n",
                                   level - have, NowS() - t0, level, LoadAverage());
    }
    have = level;
    MemoryRow row{level, {}, {}};
    for (const OperatorKind kind : {OperatorKind::kCoach, OperatorKind::kUpstream}) {
      const bool coach = kind == OperatorKind::kCoach;
      SpeedResult r = RunOperator(f, client, installation, kind,
                                  absl::StrCat("cp-mem", coach ? "c" : "u", level, "-", run_id), {},
                                  absl::StrCat("mem-", coach ? "coach-" : "up-", level),
                                  f.memory_jobs, nullptr);
      std::cout << absl::StrFormat("  %-8s %6d unrelated pods  ", coach ? "coach" : "upstream",
                                   level)
                << MemoryFigures(r);
      if (!r.ok) *rc = 1;
      (coach ? row.coach : row.upstream) = std::move(r);
    }
    memory.push_back(std::move(row));
  }
  std::cout << absl::StrFormat("\n%-16s %-40s %-40s\n", "unrelated pods", "coach peak RSS [load]",
                               "upstream peak RSS [load]");
  for (const MemoryRow& m : memory) {
    summaries->push_back(absl::StrFormat(
        "UPSTREAM-SUMMARY memory with %d unrelated pods: coach %.1f MiB (load %s), upstream "
        "%.1f MiB (load %s)",
        m.pods, m.coach.hwm_kb / 1024.0, m.coach.load, m.upstream.hwm_kb / 1024.0,
        m.upstream.load));
    std::cout << absl::StrFormat(
        "%-16d %-40s %-40s\n", m.pods,
        absl::StrFormat("%.1f MiB [%s]", m.coach.hwm_kb / 1024.0, m.coach.load),
        absl::StrFormat("%.1f MiB [%s]", m.upstream.hwm_kb / 1024.0, m.upstream.load));
  }
  return true;
}

}  // namespace

int CompareWithUpstream(const Flags& f, kubeclient::RestKubeClient* client,
                        const std::string& run_id) {
  if (!HaveRequiredFlags("upstream", {{"--upstream", &f.upstream_path},
                                      {"--upstream-crds", &f.upstream_crds},
                                      {"--coach-crds", &f.coach_crds},
                                      {"--kubectl", &f.kubectl},
                                      {"--upstream-webhook", &f.upstream_webhook}})) {
    return 2;
  }
  if (f.upstream_webhook_port <= 0 || f.upstream_webhook_port > 65535) {
    std::cerr << "--upstream-webhook-port: " << f.upstream_webhook_port << " is not a TCP port\n";
    return 2;
  }
  auto levels = ParseLevels(f.unrelated_pods);
  if (!levels.ok()) {
    std::cerr << levels.status().message() << "\n";
    return 2;
  }
  auto installation = InstallOperators(f, client);
  if (!installation.ok()) {
    std::cerr << installation.status() << "\n";
    return 2;
  }
  int rc = 0;
  std::vector<std::string> summaries;
  std::vector<Row> rows = {
      {"coach (defaults)", OperatorKind::kCoach, {}, {}},
      {"upstream (defaults: qps 20, burst 30)", OperatorKind::kUpstream, {}, {}},
      {absl::StrFormat("upstream (qps %d, burst %d)", f.upstream_raised_qps,
                       f.upstream_raised_burst),
       OperatorKind::kUpstream,
       {absl::StrCat("--kube-api-qps=", f.upstream_raised_qps),
        absl::StrCat("--kube-api-burst=", f.upstream_raised_burst)},
       {}},
  };
  if (!f.skip_speed) {
    std::cout << absl::StrFormat(
        "speed: %d jobs x %d replicas = %d pods + %d services, submitted by the harness's %d "
        "threads; each operator with its own CRDs, upstream with its validating webhook\n",
        f.jobs, f.replicas, f.jobs * f.replicas, f.jobs * f.replicas, f.client_threads);
    SideBySide how;
    how.ns_prefix = "cp-up";
    how.label_prefix = "cmp";
    how.jobs_noun = "jobs";
    how.replicas_noun = "replicas";
    how.table_heading =
        absl::StrFormat("%-38s %13s %7s %12s %10s %7s  %s\n", "operator", "all pods+svcs", "ratio",
                        "operator CPU", "peak RSS", "passes", "load average (median round)");
    how.print_row = [&](const Row& row, const RowMedians& m) {
      const double coach = m.coach_wall_s;
      // One line per row for bench/report.sh (bench/report_lib.py's parse_generic), printed last.
      summaries.push_back(absl::StrFormat(
          "UPSTREAM-SUMMARY %s: every pod and service %.2f s (x%.2f coach), CPU %.2f s, peak RSS "
          "%.1f MiB, %d x %d, median of %zu round(s), load %s",
          row.name, m.wall_s, coach > 0 ? m.wall_s / coach : 0, m.cpu_s, m.hwm_mib, f.jobs,
          f.replicas, m.walls.size(), m.median_run->load));
      std::cout << absl::StrFormat(
          "%-38s %11.2f s %7s %10.2f s %6.1f MiB %7.0f  %s  [%zu/%zu runs]\n", row.name, m.wall_s,
          coach > 0 ? absl::StrFormat("x%.1f", m.wall_s / coach) : "-", m.cpu_s, m.hwm_mib,
          m.passes, m.median_run->load, m.walls.size(), row.runs.size());
    };
    how.requests_heading =
        "API server requests during the median round (apiserver_request_total deltas of every "
        "client, watches left out: POST pytorchjobs is the harness's submission, endpoints and "
        "endpointslices the controller-manager's):\n";
    rc = RunSideBySide(f, client, installation->get(), run_id, how, &rows);
  }
  if (!f.skip_memory &&
      !CompareMemory(f, client, installation->get(), run_id, *levels, &summaries, &rc)) {
    return 1;
  }
  std::cout << "\n";
  for (const std::string& line : summaries) std::cout << line << "\n";
  return rc;
}

}  // namespace coach::bench::controlplane
