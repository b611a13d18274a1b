// coach-launch: the in-pod entrypoint. Wiring only; see launch_config.h for the contract.
//
// Exit codes: the workers' (see supervisor.h); 2 for a usage or configuration error;
// 1 when a peer did not come up within --peer-timeout.

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "launcher/gpu_discovery.h"
#include "launcher/launch_config.h"
#include "launcher/peer_wait.h"
#include "launcher/supervisor.h"
#include "launcher/worker_env.h"

extern char** environ;

namespace coach::launcher {
namespace {

constexpr char kUsage[] = R"(usage: coach-launch [flags] -- PROGRAM ARGS...
       coach-launch [flags] PROGRAM ARGS...
A drop-in for torchrun's static launch, reading the same PET_* variables (flags win):
  --nnodes N|N:N          PET_NNODES                   default 1
  --node-rank R           PET_NODE_RANK, RANK          required when nnodes > 1
  --nproc-per-node P      PET_NPROC_PER_NODE           auto|cpu|gpu|N, default auto
  --master-addr A         PET_MASTER_ADDR, MASTER_ADDR default 127.0.0.1 on one node
  --master-port P         PET_MASTER_PORT, MASTER_PORT default 29500 on one node
  --rdzv-id ID            PET_RDZV_ID                  TORCHELASTIC_RUN_ID, default none
  --peer-timeout D        wait this long for peers (default 300s)
  --grace-period D        SIGTERM -> SIGKILL delay (default 30s)
  --no-wait               do not wait for peers
  --no-python             run a *.py PROGRAM as given, not with python3 -u
Without PET_* variables or torch flags, runs PROGRAM once (single-process mode), after
waiting for the peers named by TF_CONFIG, COORDINATOR_ADDRESS, PADDLE_MASTER or MASTER_ADDR.
Exit code: the first failing worker's (128+n if killed by signal n), 2 on bad configuration,
1 when peers do not come up in time.
)";

int CpuCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

EnvMap ProcessEnv() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const EnvMap env = ProcessEnv();
  std::optional<std::string> visible;
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) visible = it->second;
  DevNodeGpuDiscovery gpus("/dev", visible);
  absl::StatusOr<LaunchConfig> config = ParseLaunchConfig(args, env, gpus, CpuCount());
  if (!config.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  if (config->wait_for_peers && !config->peers.empty()) {
    PeerWaitOptions wait;
    wait.timeout = config->peer_timeout;
    absl::Status waited = WaitForPeers(config->peers, wait);
    if (!waited.ok()) {
      std::fprintf(stderr, "coach-launch: %s\n", std::string(waited.message()).c_str());
      return 1;
    }
  }
  std::vector<WorkerSpec> workers;
  for (int local = 0; local < config->nproc_per_node; ++local) {
    workers.push_back(WorkerSpec{GlobalRank(*config, local), local, config->program,
                                 WorkerEnv(*config, local, env)});
  }
  if (config->mode == LaunchMode::kTorch) {
    std::fprintf(stderr,
                 "coach-launch: node %d/%d, %d worker(s), world size %d, master %s:%d: %s\n",
                 config->node_rank, config->nnodes, config->nproc_per_node,
                 config->nnodes * config->nproc_per_node, config->master_addr.c_str(),
                 config->master_port, absl::StrJoin(config->program, " ").c_str());
  }
  SupervisorOptions options;
  options.grace_period = config->grace_period;
  absl::StatusOr<SupervisionResult> result = Supervise(workers, options);
  if (!result.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
  return result->exit_code;
}

}  // namespace
}  // namespace coach::launcher

int main(int argc, char** argv) { return coach::launcher::Main(argc, argv); }
