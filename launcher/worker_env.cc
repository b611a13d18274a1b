#include "launcher/worker_env.h"

#include <string>

namespace coach::launcher {

int GlobalRank(const LaunchConfig& config, int local_rank) {
  if (config.mode == LaunchMode::kSingle) return 0;
  return config.node_rank * config.nproc_per_node + local_rank;
}

EnvMap WorkerEnv(const LaunchConfig& config, int local_rank, const EnvMap& inherited) {
  EnvMap env = inherited;
  if (config.mode == LaunchMode::kSingle) return env;
  const int rank = GlobalRank(config, local_rank);
  const int world = config.nnodes * config.nproc_per_node;
  env["LOCAL_RANK"] = std::to_string(local_rank);
  env["RANK"] = std::to_string(rank);
  env["WORLD_SIZE"] = std::to_string(world);
  env["LOCAL_WORLD_SIZE"] = std::to_string(config.nproc_per_node);
  env["GROUP_RANK"] = std::to_string(config.node_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(config.nnodes);
  env["ROLE_RANK"] = std::to_string(rank);
  env["ROLE_WORLD_SIZE"] = std::to_string(world);
  env["ROLE_NAME"] = "default";
  env["MASTER_ADDR"] = config.master_addr;
  env["MASTER_PORT"] = std::to_string(config.master_port);
  env["TORCHELASTIC_RESTART_COUNT"] = "0";
  env["TORCHELASTIC_MAX_RESTARTS"] = "0";
  env["TORCHELASTIC_RUN_ID"] = config.run_id;
  if (config.nproc_per_node > 1 && env.count("OMP_NUM_THREADS") == 0) {
    env["OMP_NUM_THREADS"] = "1";
  }
  return env;
}

}  // namespace coach::launcher
