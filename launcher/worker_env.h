#pragma once

// The environment torchrun gives each worker process, as a pure function.

#include "launcher/launch_config.h"

namespace coach::launcher {

// `inherited` plus, in torch mode, torchrun's variables for `local_rank`:
//   LOCAL_RANK, RANK = node_rank * nproc + local_rank, WORLD_SIZE = nnodes * nproc,
//   LOCAL_WORLD_SIZE = nproc, GROUP_RANK = node_rank, GROUP_WORLD_SIZE = nnodes,
//   ROLE_RANK = RANK, ROLE_WORLD_SIZE = WORLD_SIZE, ROLE_NAME = default,
//   MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT = $COACH_ATTEMPT (the
//   operator's whole-job attempt; 0 without it), TORCHELASTIC_MAX_RESTARTS = 0,
//   TORCHELASTIC_RUN_ID = run_id, and OMP_NUM_THREADS = 1 when nproc > 1 and it is unset.
// These override inherited values of the same name (the operator's RANK/WORLD_SIZE count
// nodes, not processes). In single-process mode `inherited` is returned unchanged.
EnvMap WorkerEnv(const LaunchConfig& config, int local_rank, const EnvMap& inherited);

// The global rank of `local_rank` (0 in single-process mode).
int GlobalRank(const LaunchConfig& config, int local_rank);

// The prefix of every output line of worker `local_rank`: config.log_line_prefix_template with
// ${rank} / $rank, ${local_rank} / $local_rank and ${role_name} / $role_name ("default")
// substituted and "$$" made "$", other "$..." kept as written (Python's
// Template.safe_substitute, which torchrun uses). Empty when there is no template.
std::string LogLinePrefix(const LaunchConfig& config, int local_rank);

}  // namespace coach::launcher
