#pragma once

// coach-launch's configuration: a pure function of argv and an environment map (both
// injected; nothing is read from the process), so every flag and variable is table-tested.
//
// Contract (flags override the environment; the first variable present wins):
//   --nnodes            PET_NNODES             "N", or "MIN:MAX". coach-launch does static
//                                              rendezvous only, so MIN:MAX is accepted when
//                                              MIN == MAX (treated as N) and rejected otherwise.
//                                              Default 1.
//   --node-rank         PET_NODE_RANK, RANK    0 <= rank < nnodes. Required when nnodes > 1.
//   --nproc-per-node    PET_NPROC_PER_NODE     auto (GPUs present, else 1: the operator counts
//                                              auto as 1 in WORLD_SIZE), cpu (usable cores),
//                                              gpu (GPUs present; error if none), or N > 0.
//                                              Default auto.
//   --master-addr       PET_MASTER_ADDR, MASTER_ADDR   Default 127.0.0.1 when nnodes == 1;
//                                              required otherwise.
//   --master-port       PET_MASTER_PORT, MASTER_PORT   1..65535. Default 29500 when nnodes == 1;
//                                              required otherwise.
//   --rdzv-id           PET_RDZV_ID            TORCHELASTIC_RUN_ID of the workers. Default "none".
//   --peer-timeout      (none)                 absl duration ("300s", "5m"), > 0. Default 300s.
//   --grace-period      (none)                 duration >= 0 between SIGTERM and SIGKILL. Default
//   30s.
//   --no-wait           (none)                 do not wait for peers.
//   --no-python         (none)                 run PROGRAM as given even when it ends in ".py"
//                                              (otherwise, like torchrun, "x.py" runs as
//                                              `python3 -u x.py`).
//   --log-line-prefix-template  PET_LOG_LINE_PREFIX_TEMPLATE, TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
//                                              torchrun's template for a prefix on every line a
//                                              worker prints (stdout and stderr), with ${rank},
//                                              ${local_rank} and ${role_name} (Python
//                                              string.Template, unknown names kept as written).
//                                              Default: no prefix.
//   --log-line-prefix   COACH_LOG_LINE_PREFIX  shorthand for the template "[rank${rank}]:"
//                                              (the variable: 1/true/yes/on or 0/false/no/off).
//                                              A template, given either way, wins.
// torchrun's underscore spellings (--nproc_per_node, --node_rank, ...) are accepted too.
//
// DNS-wait mode (an init container's job: no program is run): any --wait-for-host flag makes
// the arguments `--wait-for-host HOST [--wait-for-host HOST ...] [--peer-timeout D]`, nothing
// else (ParseHostWaitConfig). HOST must be a DNS name or an IPv4 address: letters, digits,
// '-', '_' and '.', labels of 1..63 characters, at most 253 in all, one trailing '.' allowed.
//
// Mode: torch mode when any PET_NNODES, PET_NODE_RANK, PET_NPROC_PER_NODE, PET_MASTER_ADDR,
// PET_MASTER_PORT is set or any torch flag is given; otherwise single-process mode (one child,
// environment untouched). MASTER_ADDR alone does not select torch mode: XGBoostJob sets it.
//
// Peers to wait for (each as host:port, `connect` = wait until it accepts TCP):
//   torch mode: MASTER_ADDR:MASTER_PORT when node_rank != 0 (rank 0 hosts it itself).
//   single mode, from the operator's env:
//     TF_CONFIG        every cluster address except this task's own. Resolve-only: each TF
//                      server opens its port inside the program, so waiting for connections
//                      from every task to every other one would deadlock.
//     COORDINATOR_ADDRESS:COORDINATOR_PORT (JAX) unless PROCESS_ID is 0.
//     PADDLE_MASTER    unless its host is this pod's own (POD_IP_DUMMY or HOSTNAME).
//     MASTER_ADDR:MASTER_PORT (XGBoost) unless RANK is 0.
//
// Errors: InvalidArgument, the message naming the flag or variable, e.g.
//   PET_NPROC_PER_NODE: must be auto, cpu, gpu or a positive integer, got "x"
// GPU discovery errors are passed through.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launcher/gpu_discovery.h"

namespace coach::launcher {

using EnvMap = std::map<std::string, std::string>;

// env[name], or "" when unset.
std::string EnvValue(const EnvMap& env, const char* name);

enum class LaunchMode { kTorch, kSingle };

struct PeerAddress {
  std::string host;
  int port = 0;
  bool connect = true;  // false: wait only until `host` resolves
  std::string source;   // the variable it came from, for messages
};

struct LaunchConfig {
  LaunchMode mode = LaunchMode::kSingle;
  int nnodes = 1;
  int node_rank = 0;
  int nproc_per_node = 1;
  std::string master_addr;
  int master_port = 0;
  std::string run_id = "none";
  absl::Duration peer_timeout = absl::Seconds(300);
  absl::Duration grace_period = absl::Seconds(30);
  bool wait_for_peers = true;
  std::vector<PeerAddress> peers;
  std::vector<std::string> program;      // argv of each worker, non-empty
  std::string log_line_prefix_template;  // empty: lines are passed on unprefixed
};

// The template --log-line-prefix stands for.
inline constexpr char kRankLinePrefixTemplate[] = "[rank${rank}]:";

struct HostWaitConfig {
  std::vector<std::string> hosts;  // non-empty, in the order given
  absl::Duration timeout = absl::Seconds(300);
};

// True when `args` (excluding argv[0]) ask for DNS-wait mode: a --wait-for-host flag before
// any "--".
bool IsHostWaitInvocation(const std::vector<std::string>& args);

// Parses DNS-wait mode's arguments. Errors: InvalidArgument naming the flag (an empty or
// malformed HOST, any other flag or a program, a bad --peer-timeout).
absl::StatusOr<HostWaitConfig> ParseHostWaitConfig(const std::vector<std::string>& args);

// `args` excludes argv[0]. `cpu_count` is the number of usable cores (> 0).
absl::StatusOr<LaunchConfig> ParseLaunchConfig(const std::vector<std::string>& args,
                                               const EnvMap& env, const GpuDiscovery& gpus,
                                               int cpu_count);

// "host:port" -> PeerAddress; the port is required. `source` names the input in errors.
absl::StatusOr<PeerAddress> ParseHostPort(const std::string& value, const std::string& source);

}  // namespace coach::launcher
