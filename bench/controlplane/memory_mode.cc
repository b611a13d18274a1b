#include "bench/controlplane/memory_mode.h"

#include <algorithm>
#include <iostream>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/controlplane/harness_client.h"
#include "bench/controlplane/operator_run.h"
#include "bench/controlplane/speed_result.h"
#include "bench/controlplane/watch_counter.h"
#include "bench/controlplane/workload.h"

namespace coach::bench::controlplane {

int MeasureMemory(const Flags& f, kubeclient::RestKubeClient* client, const std::string& run_id) {
  std::cout << absl::StrFormat(
      "\nmemory: operator peak RSS (VmHWM, %.0f s after its last object), default settings\n",
      f.settle_s);
  int rc = 0;
  const std::vector<std::string> extra;
  auto print = [&](const std::string& label, const SpeedResult& r) {
    std::cout << absl::StrFormat("%-58s ", label) << MemoryFigures(r);
    if (!r.ok) rc = 1;
  };
  SpeedResult a = RunCoach(f, client, "cp-mem-a-" + run_id, extra, "mem-a", f.memory_jobs, nullptr);
  print(absl::StrFormat("(a) %d jobs, empty cluster", f.memory_jobs), a);
  const int owned_jobs = std::max(1, f.unrelated / f.replicas);
  SpeedResult c = RunCoach(f, client, "cp-mem-c-" + run_id, extra, "mem-c", owned_jobs, nullptr);
  print(absl::StrFormat("(c) %d jobs (%d pods + svcs owned by coach)", owned_jobs,
                        owned_jobs * f.replicas),
        c);
  const std::string unrelated_ns = "cp-unrelated-" + run_id;
  if (CreateNamespace(client, unrelated_ns).ok()) {
    const double t0 = NowS();
    CreateUnrelated(client, unrelated_ns, f.unrelated, f.client_threads);
    std::cout << absl::StrFormat(
        "    (%d ConfigMaps + %d Pods without coach labels created in %.1f s)\n", f.unrelated,
        f.unrelated, NowS() - t0);
    SpeedResult b =
        RunCoach(f, client, "cp-mem-b-" + run_id, extra, "mem-b", f.memory_jobs, nullptr);
    print(absl::StrFormat("(b) %d jobs + %d unrelated ConfigMaps + %d unrelated Pods",
                          f.memory_jobs, f.unrelated, f.unrelated),
          b);
    DeleteNamespace(client, unrelated_ns);
  }
  return rc;
}

}  // namespace coach::bench::controlplane
