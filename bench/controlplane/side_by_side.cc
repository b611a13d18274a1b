#include "bench/controlplane/side_by_side.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/controlplane/operator_run.h"

namespace coach::bench::controlplane {

bool HaveRequiredFlags(const std::string& only,
                       const std::vector<std::pair<const char*, const std::string*>>& required) {
  for (const auto& [name, value] : required) {
    if (value->empty()) {
      std::cerr << name << " is required with --only " << only
                << " (bench/upstream/run.sh passes it)\n";
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::unique_ptr<Installation>> InstallOperators(const Flags& f,
                                                               kubeclient::KubeClient* client) {
  Installation::Options options;
  options.kubectl = f.kubectl;
  options.kubeconfig = f.kubeconfig;
  options.coach_crds = f.coach_crds;
  options.upstream_crds = f.upstream_crds;
  if (!f.train_jobs) options.webhook_json = f.upstream_webhook;
  options.log_dir = f.log_dir;
  options.train_jobs = f.train_jobs;
  return Installation::Create(client, options);
}

int RunSideBySide(const Flags& f, kubeclient::RestKubeClient* client, Installation* installation,
                  const std::string& run_id, const SideBySide& how, std::vector<Row>* rows) {
  int rc = 0;
  for (int round = 1; round <= f.rounds; ++round) {
    PrintRoundHeading(round, f.rounds);
    double coach_wall = 0;
    for (size_t i = 0; i < rows->size(); ++i) {
      Row& row = (*rows)[i];
      const std::string ns = absl::StrCat(how.ns_prefix, i, "-", run_id, "-", round);
      SpeedResult r = RunOperator(f, client, installation, row.kind, ns, row.extra,
                                  absl::StrCat(how.label_prefix, i, "-", round), f.jobs, nullptr);
      if (i == 0 && r.ok) coach_wall = r.wall_s;
      PrintSpeed(row.name, r, i == 0 ? 0 : coach_wall);
      if (r.webhook_refused) {
        std::cout << "      upstream's webhook refused a PyTorchJob with 2 Masters at create "
                     "(checked before the run)\n";
      }
      if (!r.ok) rc = 1;
      row.runs.push_back(std::move(r));
    }
  }
  std::cout << absl::StrFormat(
      "\nside by side, median of %d round(s) (ratio: to coach's median), %d %s x %d %s, pods "
      "%s\n",
      f.rounds, f.jobs, how.jobs_noun, f.replicas, how.replicas_noun,
      f.schedule ? "scheduled and run by kwok" : "left unscheduled");
  std::cout << how.table_heading;
  double coach_median = 0;
  for (size_t i = 0; i < rows->size(); ++i) {
    const Row& row = (*rows)[i];
    RowMedians m;
    std::vector<double> cpu, hwm, passes;
    for (const SpeedResult& r : row.runs) {
      if (!r.ok) continue;
      m.walls.push_back(r.wall_s);
      cpu.push_back(r.cpu_s);
      hwm.push_back(r.hwm_kb / 1024.0);
      passes.push_back(r.passes);
    }
    m.median_run = MedianRun(row.runs);
    if (m.median_run == nullptr) {
      std::cout << absl::StrFormat("%-38s   no successful run\n", row.name);
      continue;
    }
    m.wall_s = Median(m.walls);
    if (i == 0) coach_median = m.wall_s;
    m.cpu_s = Median(cpu);
    m.hwm_mib = Median(hwm);
    m.passes = Median(passes);
    m.coach_wall_s = coach_median;
    how.print_row(row, m);
  }
  std::cout << how.requests_heading;
  for (const Row& row : *rows) {
    if (const SpeedResult* mid = MedianRun(row.runs)) {
      std::cout << "  " << row.name << ": " << mid->requests << "\n";
    }
  }
  return rc;
}

}  // namespace coach::bench::controlplane
