#include "bench/controlplane/speed_mode.h"

#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/controlplane/baseline_run.h"
#include "bench/controlplane/harness_client.h"
#include "bench/controlplane/operator_run.h"
#include "bench/controlplane/speed_result.h"

namespace coach::bench::controlplane {

int CompareWithFloor(const Flags& f, kubeclient::RestKubeClient* client,
                     const std::string& run_id) {
  std::cout << absl::StrFormat(
      "speed: %d jobs x %d replicas = %d pods + %d services, submitted by %d threads\n", f.jobs,
      f.replicas, f.jobs * f.replicas, f.jobs * f.replicas, f.client_threads);
  int rc = 0;
  // Each round runs coach and both baselines back to back, so that a change in the machine's
  // load moves them together; the summary is the median of the rounds' ratios.
  std::vector<double> vs_objects, vs_end_state, vs_fixed;
  for (int round = 1; round <= f.rounds; ++round) {
    const std::string id = absl::StrCat(run_id, "-", round);
    std::vector<Item> captured;
    SpeedResult coach_default =
        RunCoach(f, client, "cp-coach-" + id, {}, "default", f.jobs, &captured);
    SpeedResult base, base_jobs;
    if (!captured.empty()) {
      base = RunBaseline(f, client, "cp-base-" + id, captured, false);
      base_jobs = RunBaseline(f, client, "cp-basej-" + id, captured, true);
    }
    SpeedResult coach_fixed;
    if (f.compare_qps > 0) {
      coach_fixed = RunCoach(f, client, "cp-fixed-" + id,
                             {absl::StrCat("--kube-api-qps=", f.compare_qps),
                              absl::StrCat("--kube-api-burst=", f.compare_burst)},
                             "fixed", f.jobs, nullptr);
    }
    PrintRoundHeading(round, f.rounds);
    PrintSpeed("baseline: pods+services, 32 threads", base, 0);
    PrintSpeed("baseline: jobs, owned objects, status", base_jobs, base.ok ? base.wall_s : 0);
    PrintSpeed("coach, default settings", coach_default, base.ok ? base.wall_s : 0);
    if (f.compare_qps > 0) {
      PrintSpeed(absl::StrCat("coach --kube-api-qps ", f.compare_qps, " --burst ", f.compare_burst),
                 coach_fixed, base.ok ? base.wall_s : 0);
    }
    std::cout << absl::StrFormat("operator ready after %.2f s (default) / %.2f s (fixed limit)\n",
                                 coach_default.ready_after, coach_fixed.ready_after);
    if (!base.ok || !coach_default.ok || !base_jobs.ok) {
      rc = 1;
      continue;
    }
    vs_objects.push_back(coach_default.wall_s / base.wall_s);
    if (coach_default.end_state_s > 0 && base_jobs.end_state_s > 0) {
      vs_end_state.push_back(coach_default.end_state_s / base_jobs.end_state_s);
    }
    if (coach_fixed.ok) vs_fixed.push_back(coach_fixed.wall_s / base.wall_s);
  }
  std::cout << absl::StrFormat(
      "coach/baseline, median of %zu round(s)%s: default settings vs pods+services x%.2f [%s]; "
      "to the same end state "
      "(jobs, owned objects, statuses) x%.2f [%s] (goal x1.25)",
      vs_objects.size(),
      f.schedule ? ", pods scheduled and run by kwok" : ", pods left unscheduled",
      Median(vs_objects), EachFixed2(vs_objects), Median(vs_end_state), EachFixed2(vs_end_state));
  if (!vs_fixed.empty()) {
    std::cout << absl::StrFormat("; fixed %g qps vs pods+services x%.2f", f.compare_qps,
                                 Median(vs_fixed));
  }
  std::cout << "\n";
  return rc;
}

}  // namespace coach::bench::controlplane
