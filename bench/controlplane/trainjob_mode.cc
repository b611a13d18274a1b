#include "bench/controlplane/trainjob_mode.h"

#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/controlplane/side_by_side.h"
#include "bench/controlplane/speed_result.h"

namespace coach::bench::controlplane {

int CompareTrainJobs(const Flags& f, kubeclient::RestKubeClient* client,
                     const std::string& run_id) {
  if (!HaveRequiredFlags("trainjob", {{"--upstream-trainer", &f.upstream_trainer},
                                      {"--upstream-crds", &f.upstream_crds},
                                      {"--coach-crds", &f.coach_crds},
                                      {"--kubectl", &f.kubectl}})) {
    return 2;
  }
  auto installation = InstallOperators(f, client);
  if (!installation.ok()) {
    std::cerr << installation.status() << "\n";
    return 2;
  }
  std::vector<Row> rows = {
      {"coach (defaults)", OperatorKind::kCoach, {}, {}},
      {"upstream Trainer + JobSet (defaults)", OperatorKind::kUpstreamTrainer, {}, {}},
  };
  if (!f.coach_flags.empty()) {
    rows.push_back({absl::StrCat("coach (", absl::StrJoin(f.coach_flags, " "), ")"),
                    OperatorKind::kCoach,
                    f.coach_flags,
                    {}});
  }
  std::cout << absl::StrFormat(
      "speed: %d TrainJobs x %d nodes (torch-distributed) = %d pods + %d services, submitted by "
      "the harness's %d threads; each operator with its own CRDs, upstream with Trainer's and "
      "JobSet's webhooks\n",
      f.jobs, f.replicas, f.jobs * f.replicas, f.jobs, f.client_threads);
  SideBySide how;
  how.ns_prefix = "cp-tj";
  how.label_prefix = "tj";
  how.jobs_noun = "TrainJobs";
  how.replicas_noun = "nodes";
  how.print_row = [&](const Row& row, const RowMedians& m) {
    const double coach = m.coach_wall_s;
    std::cout << absl::StrFormat(
        "TRAINJOB-SUMMARY %s: every pod and service %.2f s [%s] (x%.2f coach), CPU %.2f s, peak "
        "RSS %.1f MiB, %d x %d, median of %zu round(s), load %s\n",
        row.name, m.wall_s, EachFixed2(m.walls), coach > 0 ? m.wall_s / coach : 0, m.cpu_s,
        m.hwm_mib, f.jobs, f.replicas, m.walls.size(), m.median_run->load);
  };
  how.requests_heading =
      "API server requests during the median round (every client's; POST trainjobs is the "
      "harness's submission):\n";
  return RunSideBySide(f, client, installation->get(), run_id, how, &rows);
}

}  // namespace coach::bench::controlplane
