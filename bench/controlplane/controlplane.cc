// Control-plane benchmark of coach-operator --backend=kube on a real API server (figures,
// not a test; see bench/README.md, section bench/controlplane). Its modes (--only):
//   speed     coach against the tight client's floor (speed_mode.h)
//   memory    coach's peak RSS owning jobs, beside unrelated objects (memory_mode.h)
//   upstream  coach side by side with the upstream Training Operator (upstream_mode.h)
//   trainjob  coach side by side with upstream Trainer v2 + JobSet (trainjob_mode.h)
// Without --only: speed, then memory.

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/controlplane/flags.h"
#include "bench/controlplane/harness_client.h"
#include "bench/controlplane/memory_mode.h"
#include "bench/controlplane/speed_mode.h"
#include "bench/controlplane/trainjob_mode.h"
#include "bench/controlplane/upstream_mode.h"
#include "bench/controlplane/watch_counter.h"
#include "bench/controlplane/workload.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace {

namespace cp = coach::bench::controlplane;
namespace k8s = coach::kubeclient;

// A fresh API server builds a custom resource's handler (schema, validation) on the first
// request for it, which takes seconds on a busy machine: pay that here, not inside the first
// measured run (a real cluster has had coach's CRDs for long).
void WarmUp(k8s::RestKubeClient* client, const std::string& run_id) {
  const std::string warm = "cp-warmup-" + run_id;
  const double t0 = cp::NowS();
  if (cp::CreateNamespace(client, warm).ok()) {
    auto r = client->Create(cp::PyTorchJobs(), warm, cp::PyTorchJob(warm, "warmup", 1, false));
    if (!r.ok()) std::cerr << "warm-up job: " << r.status() << "\n";
    cp::DeleteNamespace(client, warm);  // gone before any operator could see its job
  }
  std::cout << absl::StrFormat(
      "custom resources warmed up in %.2f s (first PyTorchJob POST on this server)\n",
      cp::NowS() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  cp::Flags f;
  CLI::App app{
      "coach-operator --backend=kube against a real API server: time to create every pod and "
      "service of N jobs, vs a tight parallel client; operator CPU and peak RSS"};
  cp::AddFlags(app, &f);
  CLI11_PARSE(app, argc, argv);
  f.train_jobs = f.only == "trainjob";

  auto config = k8s::LoadKubeConfigFile(f.kubeconfig);
  if (!config.ok()) {
    std::cerr << config.status() << "\n";
    return 1;
  }
  k8s::RestKubeClientOptions unlimited;
  unlimited.qps = 0;  // no client-side limit: the API server's own
  auto client = k8s::RestKubeClient::Create(*config, unlimited);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 1;
  }
  std::cout << std::unitbuf;
  const std::string run_id =
      absl::StrFormat("%x", static_cast<unsigned>(absl::ToUnixSeconds(absl::Now()) & 0xffffff));
  WarmUp(client->get(), run_id);

  if (f.only == "upstream") return cp::CompareWithUpstream(f, client->get(), run_id);
  if (f.only == "trainjob") return cp::CompareTrainJobs(f, client->get(), run_id);
  if (!f.only.empty() && f.only != "speed" && f.only != "memory") {
    std::cerr << "--only: \"" << f.only << "\" is not speed, memory, upstream or trainjob\n";
    return 2;
  }
  int rc = 0;
  if (f.only.empty() || f.only == "speed") rc |= cp::CompareWithFloor(f, client->get(), run_id);
  if (f.only.empty() || f.only == "memory") rc |= cp::MeasureMemory(f, client->get(), run_id);
  return rc;
}
