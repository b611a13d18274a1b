#include "launcher/worker_env.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace coach::launcher {
namespace {

LaunchConfig TwoByThree() {
  LaunchConfig c;
  c.mode = LaunchMode::kTorch;
  c.nnodes = 2;
  c.node_rank = 1;
  c.nproc_per_node = 3;
  c.master_addr = "job-master-0";
  c.master_port = 23456;
  c.run_id = "rid";
  return c;
}

TEST(WorkerEnvTest, TorchrunVariablesExactly) {
  const EnvMap inherited = {
      {"PATH", "/bin"}, {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"PET_NNODES", "2"}};
  const EnvMap env = WorkerEnv(TwoByThree(), 2, inherited);
  const EnvMap expected = {
      {"PATH", "/bin"},
      {"PET_NNODES", "2"},
      {"LOCAL_RANK", "2"},
      {"RANK", "5"},
      {"WORLD_SIZE", "6"},
      {"LOCAL_WORLD_SIZE", "3"},
      {"GROUP_RANK", "1"},
      {"GROUP_WORLD_SIZE", "2"},
      {"ROLE_RANK", "5"},
      {"ROLE_WORLD_SIZE", "6"},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", "job-master-0"},
      {"MASTER_PORT", "23456"},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      {"TORCHELASTIC_RUN_ID", "rid"},
      {"OMP_NUM_THREADS", "1"},
  };
  EXPECT_EQ(env, expected);
  EXPECT_EQ(GlobalRank(TwoByThree(), 2), 5);
}

// A whole-job restart by the operator is the restart count the program sees; a value that is
// not a count is no restart.
TEST(WorkerEnvTest, RestartCountIsTheOperatorsAttempt) {
  EXPECT_EQ(WorkerEnv(TwoByThree(), 0, {{"COACH_ATTEMPT", "3"}}).at("TORCHELASTIC_RESTART_COUNT"),
            "3");
  EXPECT_EQ(WorkerEnv(TwoByThree(), 0, {{"COACH_ATTEMPT", "-1"}}).at("TORCHELASTIC_RESTART_COUNT"),
            "0");
  EXPECT_EQ(WorkerEnv(TwoByThree(), 0, {{"COACH_ATTEMPT", "x"}}).at("TORCHELASTIC_RESTART_COUNT"),
            "0");
}

TEST(WorkerEnvTest, OmpThreadsKeptWhenSetAndUnsetForOneProcess) {
  EXPECT_EQ(WorkerEnv(TwoByThree(), 0, {{"OMP_NUM_THREADS", "8"}}).at("OMP_NUM_THREADS"), "8");
  LaunchConfig one = TwoByThree();
  one.nproc_per_node = 1;
  EXPECT_EQ(WorkerEnv(one, 0, {}).count("OMP_NUM_THREADS"), 0u);
}

TEST(WorkerEnvTest, SingleModeLeavesEnvAlone) {
  LaunchConfig c;
  const EnvMap inherited = {{"TF_CONFIG", "{}"}, {"RANK", "3"}};
  EXPECT_EQ(WorkerEnv(c, 0, inherited), inherited);
  EXPECT_EQ(GlobalRank(c, 0), 0);
}

TEST(LogLinePrefixTest, ExpandsTorchrunsMacrosLikeSafeSubstitute) {
  LaunchConfig c = TwoByThree();  // local rank 2 on node 1 is rank 5
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"[rank${rank}]:", "[rank5]:"},
      {"[${role_name}${local_rank}]:", "[default2]:"},
      {"$rank/$local_rank ", "5/2 "},
      {"$$rank ${unknown} $other ${rank", "$rank ${unknown} $other ${rank"},
      {"cost $", "cost $"},
      {"${rank}${rank}", "55"},
  };
  for (const auto& [tmpl, want] : cases) {
    c.log_line_prefix_template = tmpl;
    EXPECT_EQ(LogLinePrefix(c, 2), want) << tmpl;
  }
  LaunchConfig single;
  single.log_line_prefix_template = "[rank${rank}]:";
  EXPECT_EQ(LogLinePrefix(single, 0), "[rank0]:");
}

}  // namespace
}  // namespace coach::launcher
