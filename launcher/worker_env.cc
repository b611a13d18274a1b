#include "launcher/worker_env.h"

#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace coach::launcher {
namespace {

bool IdentifierChar(char c, bool first) {
  return c == '_' || absl::ascii_isalpha(static_cast<unsigned char>(c)) ||
         (!first && absl::ascii_isdigit(static_cast<unsigned char>(c)));
}

}  // namespace

std::string LogLinePrefix(const LaunchConfig& config, int local_rank) {
  const std::string& t = config.log_line_prefix_template;
  const std::map<std::string, std::string> values = {
      {"rank", std::to_string(GlobalRank(config, local_rank))},
      {"local_rank", std::to_string(local_rank)},
      {"role_name", "default"}};
  std::string out;
  for (size_t i = 0; i < t.size();) {
    if (t[i] != '$' || i + 1 == t.size()) {
      out += t[i++];
      continue;
    }
    if (t[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    const bool braced = t[i + 1] == '{';
    size_t start = i + (braced ? 2 : 1), end = start;
    while (end < t.size() && IdentifierChar(t[end], end == start)) ++end;
    const bool closed = !braced || (end < t.size() && t[end] == '}');
    auto it = values.find(t.substr(start, end - start));
    if (end == start || !closed || it == values.end()) {
      out += t[i++];  // not a macro we know: kept as written
      continue;
    }
    out += it->second;
    i = end + (braced ? 1 : 0);
  }
  return out;
}

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
  // A whole-job restart is the operator's, not this launcher's: the attempt it started
  // (COACH_ATTEMPT) is the restart count torchrun would have reported.
  int attempt = 0;
  auto it = inherited.find("COACH_ATTEMPT");
  if (it == inherited.end() || !absl::SimpleAtoi(it->second, &attempt) || attempt < 0) attempt = 0;
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(attempt);
  env["TORCHELASTIC_MAX_RESTARTS"] = "0";
  env["TORCHELASTIC_RUN_ID"] = config.run_id;
  if (config.nproc_per_node > 1 && env.count("OMP_NUM_THREADS") == 0) {
    env["OMP_NUM_THREADS"] = "1";
  }
  return env;
}

}  // namespace coach::launcher
