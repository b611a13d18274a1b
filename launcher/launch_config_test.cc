#include "launcher/launch_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace coach::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FakeGpus : public GpuDiscovery {
 public:
  explicit FakeGpus(absl::StatusOr<int> count) : count_(std::move(count)) {}
  absl::StatusOr<int> CountGpus() const override {
    ++calls_;
    return count_;
  }
  mutable int calls_ = 0;

 private:
  absl::StatusOr<int> count_;
};

constexpr int kCpus = 6;

absl::StatusOr<LaunchConfig> Parse(std::vector<std::string> args, EnvMap env = {}, int gpus = 0) {
  FakeGpus fake(gpus);
  return ParseLaunchConfig(args, env, fake, kCpus);
}

struct OkCase {
  std::string name;
  std::vector<std::string> args;
  EnvMap env;
  int gpus;
  LaunchMode mode;
  int nnodes;
  int node_rank;
  int nproc;
  std::string master_addr;
  int master_port;
};

class ParseOkTest : public ::testing::TestWithParam<OkCase> {};

TEST_P(ParseOkTest, Parses) {
  const OkCase& c = GetParam();
  auto config = Parse(c.args, c.env, c.gpus);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, c.mode);
  EXPECT_EQ(config->nnodes, c.nnodes);
  EXPECT_EQ(config->node_rank, c.node_rank);
  EXPECT_EQ(config->nproc_per_node, c.nproc);
  EXPECT_EQ(config->master_addr, c.master_addr);
  EXPECT_EQ(config->master_port, c.master_port);
  EXPECT_FALSE(config->program.empty());
}

const auto kTorch = LaunchMode::kTorch;
const auto kSingle = LaunchMode::kSingle;

INSTANTIATE_TEST_SUITE_P(
    Table, ParseOkTest,
    ::testing::Values(
        OkCase{"SingleModeNoEnv", {"prog"}, {}, 0, kSingle, 1, 0, 1, "", 0},
        OkCase{"XGBoostEnvIsNotTorch",
               {"prog"},
               {{"MASTER_ADDR", "m"}, {"MASTER_PORT", "9999"}, {"RANK", "1"}},
               0,
               kSingle,
               1,
               0,
               1,
               "",
               0},
        OkCase{"TorchDefaultsOneNode",
               {"prog"},
               {{"PET_NPROC_PER_NODE", "auto"}},
               0,
               kTorch,
               1,
               0,
               1,
               "127.0.0.1",
               29500},
        OkCase{"AutoUsesGpus",
               {"prog"},
               {{"PET_NPROC_PER_NODE", "auto"}},
               4,
               kTorch,
               1,
               0,
               4,
               "127.0.0.1",
               29500},
        OkCase{"GpuUsesGpus",
               {"prog"},
               {{"PET_NPROC_PER_NODE", "gpu"}},
               2,
               kTorch,
               1,
               0,
               2,
               "127.0.0.1",
               29500},
        OkCase{"CpuUsesCores",
               {"prog"},
               {{"PET_NPROC_PER_NODE", "cpu"}},
               2,
               kTorch,
               1,
               0,
               kCpus,
               "127.0.0.1",
               29500},
        OkCase{"NumericNproc",
               {"prog"},
               {{"PET_NPROC_PER_NODE", "3"}},
               8,
               kTorch,
               1,
               0,
               3,
               "127.0.0.1",
               29500},
        OkCase{"PyTorchJobWorkerEnv",
               {"prog"},
               {{"PET_NNODES", "3"},
                {"PET_NODE_RANK", "2"},
                {"PET_NPROC_PER_NODE", "2"},
                {"PET_MASTER_ADDR", "job-master-0"},
                {"PET_MASTER_PORT", "23456"},
                {"MASTER_ADDR", "ignored"},
                {"MASTER_PORT", "1"},
                {"RANK", "0"}},
               0,
               kTorch,
               3,
               2,
               2,
               "job-master-0",
               23456},
        OkCase{"FallsBackToRankAndMasterVars",
               {"prog"},
               {{"PET_NNODES", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "m0"}, {"MASTER_PORT", "1234"}},
               0,
               kTorch,
               2,
               1,
               1,
               "m0",
               1234},
        OkCase{"ElasticEqualRangeIsStatic",
               {"prog"},
               {{"PET_NNODES", "2:2"},
                {"PET_NODE_RANK", "0"},
                {"MASTER_ADDR", "m"},
                {"MASTER_PORT", "5"}},
               0,
               kTorch,
               2,
               0,
               1,
               "m",
               5},
        OkCase{"FlagsOverrideEnv",
               {"--nnodes", "4", "--node-rank=3", "--nproc-per-node", "5", "--master-addr",
                "flag-host", "--master-port", "4242", "--", "prog"},
               {{"PET_NNODES", "2"},
                {"PET_NODE_RANK", "1"},
                {"PET_NPROC_PER_NODE", "x"},
                {"PET_MASTER_ADDR", "env-host"},
                {"PET_MASTER_PORT", "bad"}},
               0,
               kTorch,
               4,
               3,
               5,
               "flag-host",
               4242},
        OkCase{"TorchrunUnderscoreSpellings",
               {"--nnodes=2", "--node_rank=1", "--nproc_per_node=2", "--master_addr=h",
                "--master_port=7", "prog"},
               {},
               0,
               kTorch,
               2,
               1,
               2,
               "h",
               7},
        OkCase{"FlagSelectsTorchMode",
               {"--nproc-per-node=2", "prog"},
               {},
               0,
               kTorch,
               1,
               0,
               2,
               "127.0.0.1",
               29500}),
    [](const auto& info) { return info.param.name; });

struct ErrCase {
  std::string name;
  std::vector<std::string> args;
  EnvMap env;
  int gpus;
  std::string message;  // substring
};

class ParseErrTest : public ::testing::TestWithParam<ErrCase> {};

TEST_P(ParseErrTest, FailsNamingTheInput) {
  const ErrCase& c = GetParam();
  auto config = Parse(c.args, c.env, c.gpus);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.message));
}

const EnvMap kTwoNodes = {
    {"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}};

EnvMap With(EnvMap env, const std::string& k, const std::string& v) {
  env[k] = v;
  return env;
}
EnvMap Without(EnvMap env, const std::string& k) {
  env.erase(k);
  return env;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseErrTest,
    ::testing::Values(
        ErrCase{"NoProgram", {}, {}, 0, "PROGRAM: missing"},
        ErrCase{"NoProgramAfterSeparator", {"--nnodes=1", "--"}, {}, 0, "PROGRAM: missing"},
        ErrCase{"UnknownFlagBeforeSeparator", {"--bogus", "--", "prog"}, {}, 0, "--bogus"},
        ErrCase{"UnknownFlagWithoutSeparator", {"--bogus", "prog"}, {}, 0, "unknown flag --bogus"},
        ErrCase{"NprocWord",
                {"prog"},
                {{"PET_NPROC_PER_NODE", "x"}},
                0,
                "PET_NPROC_PER_NODE: must be auto, cpu, gpu or a positive integer"},
        ErrCase{"NprocZero",
                {"prog"},
                {{"PET_NPROC_PER_NODE", "0"}},
                0,
                "PET_NPROC_PER_NODE: must be auto, cpu, gpu or a positive integer"},
        ErrCase{"NprocTooMany",
                {"--nproc-per-node=5000", "prog"},
                {},
                0,
                "--nproc-per-node: must be auto"},
        ErrCase{"GpuWithoutGpus",
                {"prog"},
                {{"PET_NPROC_PER_NODE", "gpu"}},
                0,
                "PET_NPROC_PER_NODE: is gpu but no GPU is visible"},
        ErrCase{"NnodesWord",
                {"prog"},
                {{"PET_NNODES", "two"}},
                0,
                "PET_NNODES: must be a positive integer N or MIN:MAX, got \"two\""},
        ErrCase{"NnodesZero", {"--nnodes=0", "prog"}, {}, 0, "--nnodes: must be a positive"},
        ErrCase{"NnodesBadRange", {"prog"}, {{"PET_NNODES", "3:1"}}, 0, "PET_NNODES: must be"},
        ErrCase{"NnodesElastic",
                {"prog"},
                {{"PET_NNODES", "1:4"}},
                0,
                "PET_NNODES: elastic MIN:MAX with MIN != MAX"},
        ErrCase{"NodeRankMissing",
                {"prog"},
                Without(Without(kTwoNodes, "PET_NODE_RANK"), "RANK"),
                0,
                "--node-rank: required when nnodes > 1"},
        ErrCase{"NodeRankOutOfRange",
                {"prog"},
                With(kTwoNodes, "PET_NODE_RANK", "2"),
                0,
                "PET_NODE_RANK: must be an integer in [0, 2)"},
        ErrCase{"NodeRankNegativeFlag",
                {"--node-rank=-1", "prog"},
                kTwoNodes,
                0,
                "--node-rank: must be an integer in [0, 2)"},
        ErrCase{"RankFallbackBad",
                {"prog"},
                With(Without(kTwoNodes, "PET_NODE_RANK"), "RANK", "z"),
                0,
                "RANK: must be an integer"},
        ErrCase{"MasterAddrMissing",
                {"prog"},
                Without(kTwoNodes, "MASTER_ADDR"),
                0,
                "--master-addr: required when nnodes > 1"},
        ErrCase{"MasterAddrEmpty",
                {"prog"},
                With(kTwoNodes, "PET_MASTER_ADDR", ""),
                0,
                "PET_MASTER_ADDR: must be a host name"},
        ErrCase{"MasterAddrSpace",
                {"--master-addr", "a b", "prog"},
                kTwoNodes,
                0,
                "--master-addr: must be a host name"},
        ErrCase{"MasterPortMissing",
                {"prog"},
                Without(kTwoNodes, "MASTER_PORT"),
                0,
                "--master-port: required when nnodes > 1"},
        ErrCase{"MasterPortRange",
                {"prog"},
                With(kTwoNodes, "PET_MASTER_PORT", "70000"),
                0,
                "PET_MASTER_PORT: must be a port number in 1..65535, got \"70000\""},
        ErrCase{"MasterPortWord",
                {"prog"},
                With(kTwoNodes, "MASTER_PORT", "http"),
                0,
                "MASTER_PORT: must be a port number"},
        ErrCase{"MasterPortFlag", {"--master-port=0", "prog"}, {}, 0, "--master-port: must be"},
        ErrCase{"RdzvIdEmpty",
                {"prog"},
                {{"PET_RDZV_ID", ""}, {"PET_NNODES", "1"}},
                0,
                "PET_RDZV_ID: must not be empty"},
        ErrCase{"PeerTimeoutWord",
                {"--peer-timeout=soon", "prog"},
                {},
                0,
                "--peer-timeout: must be a duration like 30s or 5m, got \"soon\""},
        ErrCase{"PeerTimeoutZero",
                {"--peer-timeout=0s", "prog"},
                {},
                0,
                "--peer-timeout: must be a finite duration > 0"},
        ErrCase{"GraceNegative",
                {"--grace-period=-1s", "prog"},
                {},
                0,
                "--grace-period: must be a finite duration >= 0"},
        ErrCase{"TfConfigNotJson", {"prog"}, {{"TF_CONFIG", "{"}}, 0, "TF_CONFIG: must be a JSON"},
        ErrCase{"TfConfigBadTask",
                {"prog"},
                {{"TF_CONFIG", R"({"task":{"type":1}})"}},
                0,
                "TF_CONFIG: task must be"},
        ErrCase{"TfConfigBadCluster",
                {"prog"},
                {{"TF_CONFIG", R"({"cluster":[]})"}},
                0,
                "TF_CONFIG: cluster must be an object"},
        ErrCase{"TfConfigBadAddress",
                {"prog"},
                {{"TF_CONFIG", R"({"cluster":{"worker":["nohostport"]}})"}},
                0,
                "TF_CONFIG: must be host:port, got \"nohostport\""},
        ErrCase{"TfConfigBadEntry",
                {"prog"},
                {{"TF_CONFIG", R"({"cluster":{"worker":[3]}})"}},
                0,
                "TF_CONFIG: cluster.worker entries must be strings"},
        ErrCase{"JaxBadPort",
                {"prog"},
                {{"COORDINATOR_ADDRESS", "c"}, {"COORDINATOR_PORT", "x"}, {"PROCESS_ID", "1"}},
                0,
                "COORDINATOR_PORT: must be a port number"},
        ErrCase{"JaxBadProcessId",
                {"prog"},
                {{"COORDINATOR_ADDRESS", "c"}, {"COORDINATOR_PORT", "1"}, {"PROCESS_ID", "-3"}},
                0,
                "PROCESS_ID: must be a non-negative integer"},
        ErrCase{"JaxNoPort",
                {"prog"},
                {{"COORDINATOR_ADDRESS", "c"}},
                0,
                "COORDINATOR_ADDRESS: must be host:port"},
        ErrCase{"PaddleBad",
                {"prog"},
                {{"PADDLE_MASTER", "p:99999"}},
                0,
                "PADDLE_MASTER: must be host:port with a port in 1..65535"},
        ErrCase{"XGBoostNoPort",
                {"prog"},
                {{"MASTER_ADDR", "m"}},
                0,
                "MASTER_PORT: required when MASTER_ADDR is set"},
        ErrCase{"XGBoostBadRank",
                {"prog"},
                {{"MASTER_ADDR", "m"}, {"MASTER_PORT", "1"}, {"RANK", "first"}},
                0,
                "RANK: must be a non-negative integer"}),
    [](const auto& info) { return info.param.name; });

TEST(ParseLaunchConfigTest, GpuDiscoveryErrorsPassThrough) {
  FakeGpus fake(absl::InternalError("GPU discovery: cannot list /dev"));
  auto config = ParseLaunchConfig({"prog"}, {{"PET_NPROC_PER_NODE", "auto"}}, fake, kCpus);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInternal);
}

TEST(ParseLaunchConfigTest, GpusAreNotProbedForNumericNproc) {
  FakeGpus fake(absl::InternalError("must not be called"));
  auto config = ParseLaunchConfig({"prog"}, {{"PET_NPROC_PER_NODE", "2"}}, fake, kCpus);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(fake.calls_, 0);
}

TEST(ParseLaunchConfigTest, ProgramAndArgsAfterSeparatorAreKeptVerbatim) {
  auto config = Parse({"--nproc-per-node=1", "--", "/bin/echo", "--nnodes=9", "--", "$(x)"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->program, ElementsAre("/bin/echo", "--nnodes=9", "--", "$(x)"));
}

TEST(ParseLaunchConfigTest, ProgramWithoutSeparatorStopsFlagParsing) {
  auto config = Parse({"--nproc-per-node", "2", "/bin/echo", "--nnodes=9", "x"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->nproc_per_node, 2);
  EXPECT_EQ(config->nnodes, 1);
  EXPECT_THAT(config->program, ElementsAre("/bin/echo", "--nnodes=9", "x"));
}

TEST(ParseLaunchConfigTest, PythonScriptRunsUnderPythonLikeTorchrun) {
  auto config = Parse({"train.py", "--lr=1"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->program, ElementsAre("python3", "-u", "train.py", "--lr=1"));
  config = Parse({"--no-python", "train.py"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->program, ElementsAre("train.py"));
}

TEST(ParseLaunchConfigTest, DurationsAndNoWait) {
  auto config = Parse({"prog"});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->peer_timeout, absl::Seconds(300));
  EXPECT_EQ(config->grace_period, absl::Seconds(30));
  EXPECT_TRUE(config->wait_for_peers);
  config = Parse({"--peer-timeout", "5m", "--grace-period=0", "--no-wait", "--", "prog"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->peer_timeout, absl::Minutes(5));
  EXPECT_EQ(config->grace_period, absl::ZeroDuration());
  EXPECT_FALSE(config->wait_for_peers);
  config = Parse({"--peer-timeout=45", "prog"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->peer_timeout, absl::Seconds(45));
}

TEST(ParseLaunchConfigTest, RunIdFromEnvAndFlag) {
  auto config = Parse({"prog"}, {{"PET_RDZV_ID", "job-1"}, {"PET_NNODES", "1"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->run_id, "job-1");
  config = Parse({"--rdzv-id=flag", "prog"}, {{"PET_RDZV_ID", "job-1"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->run_id, "flag");
  config = Parse({"--nproc-per-node=1", "prog"});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->run_id, "none");
}

// Peers, as "host:port/connect" strings.
std::vector<std::string> Peers(const LaunchConfig& c) {
  std::vector<std::string> out;
  for (const PeerAddress& p : c.peers) {
    out.push_back(p.host + ":" + std::to_string(p.port) + (p.connect ? "/connect" : "/resolve") +
                  " " + p.source);
  }
  return out;
}

TEST(PeersTest, TorchWorkerWaitsForMasterButRankZeroDoesNot) {
  EnvMap env = {{"PET_NNODES", "2"},
                {"PET_NODE_RANK", "1"},
                {"PET_MASTER_ADDR", "job-master-0"},
                {"PET_MASTER_PORT", "23456"}};
  auto config = Parse({"prog"}, env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("job-master-0:23456/connect PET_MASTER_ADDR"));
  env["PET_NODE_RANK"] = "0";
  config = Parse({"prog"}, env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->peers.empty());
  config = Parse({"--nproc-per-node=2", "prog"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->peers.empty());
}

TEST(PeersTest, TfConfigEveryOtherTaskResolveOnly) {
  auto config = Parse(
      {"prog"},
      {{"TF_CONFIG",
        R"({"cluster":{"ps":["j-ps-0.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},)"
        R"("task":{"type":"worker","index":1},"environment":"cloud"})"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("j-ps-0.ns.svc:2222/resolve TF_CONFIG",
                                          "j-worker-0.ns.svc:2222/resolve TF_CONFIG"));
}

TEST(PeersTest, TfConfigSparseClusterForm) {
  auto config = Parse({"prog"}, {{"TF_CONFIG", R"({"cluster":{"worker":{"0":"a:1","3":"b:2"}},)"
                                               R"("task":{"type":"worker","index":3}})"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("a:1/resolve TF_CONFIG"));
}

TEST(PeersTest, JaxCoordinator) {
  EnvMap env = {{"COORDINATOR_ADDRESS", "j-worker-0"},
                {"COORDINATOR_PORT", "6666"},
                {"PROCESS_ID", "2"},
                {"NUM_PROCESSES", "3"}};
  auto config = Parse({"prog"}, env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("j-worker-0:6666/connect COORDINATOR_ADDRESS"));
  env["PROCESS_ID"] = "0";
  config = Parse({"prog"}, env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->peers.empty());
  config = Parse({"prog"}, {{"COORDINATOR_ADDRESS", "c:7"}, {"PROCESS_ID", "1"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("c:7/connect COORDINATOR_ADDRESS"));
}

TEST(PeersTest, PaddleMasterUnlessOwn) {
  auto config =
      Parse({"prog"}, {{"PADDLE_MASTER", "j-worker-0:36543"}, {"HOSTNAME", "j-worker-1"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("j-worker-0:36543/connect PADDLE_MASTER"));
  config = Parse({"prog"}, {{"PADDLE_MASTER", "10.0.0.7:36543"}, {"POD_IP_DUMMY", "10.0.0.7"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->peers.empty());
  config = Parse({"prog"}, {{"PADDLE_MASTER", "j-worker-0:1"}, {"HOSTNAME", "j-worker-0"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->peers.empty());
}

TEST(PeersTest, XGBoostMasterUnlessRankZero) {
  EnvMap env = {
      {"MASTER_ADDR", "x-master-0"}, {"MASTER_PORT", "9999"}, {"RANK", "2"}, {"WORLD_SIZE", "3"}};
  auto config = Parse({"prog"}, env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(Peers(*config), ElementsAre("x-master-0:9999/connect MASTER_ADDR"));
  env["RANK"] = "0";
  config = Parse({"prog"}, env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->peers.empty());
}

TEST(ParseHostPortTest, Forms) {
  auto p = ParseHostPort("[::1]:80", "X");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host, "::1");
  EXPECT_EQ(p->port, 80);
  EXPECT_FALSE(ParseHostPort(":80", "X").ok());
  EXPECT_FALSE(ParseHostPort("h:", "X").ok());
  EXPECT_FALSE(ParseHostPort("h:0", "X").ok());
}

struct PrefixCase {
  std::string name;
  std::vector<std::string> args;
  EnvMap env;
  std::string want;  // the template; empty: no prefixes
};

class LogLinePrefixTest : public testing::TestWithParam<PrefixCase> {};

TEST_P(LogLinePrefixTest, PicksTheTemplate) {
  auto config = Parse(GetParam().args, GetParam().env);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->log_line_prefix_template, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LogLinePrefixTest,
    testing::Values(
        // Off unless asked for.
        PrefixCase{"Default", {"prog"}, {}, ""},
        PrefixCase{"RankFlag", {"--log-line-prefix", "prog"}, {}, "[rank${rank}]:"},
        PrefixCase{"RankEnv", {"prog"}, {{"COACH_LOG_LINE_PREFIX", "1"}}, "[rank${rank}]:"},
        PrefixCase{"RankEnvOff", {"prog"}, {{"COACH_LOG_LINE_PREFIX", "false"}}, ""},
        // torchrun's flag and variables; a template wins over the shorthand, flags over env.
        PrefixCase{"TemplateFlag",
                   {"--log-line-prefix-template", "[${role_name}${local_rank}]:", "prog"},
                   {},
                   "[${role_name}${local_rank}]:"},
        PrefixCase{"UnderscoreFlag", {"--log_line_prefix_template=<$rank>", "prog"}, {}, "<$rank>"},
        PrefixCase{"TorchelasticEnv",
                   {"prog"},
                   {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "[${rank}]:"}},
                   "[${rank}]:"},
        PrefixCase{
            "PetEnvBeforeTorchelastic",
            {"prog"},
            {{"PET_LOG_LINE_PREFIX_TEMPLATE", "a"}, {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "b"}},
            "a"},
        PrefixCase{"TemplateOverShorthand",
                   {"--log-line-prefix", "--log-line-prefix-template=T", "prog"},
                   {},
                   "T"},
        PrefixCase{"ShorthandFlagOverEnvTemplate",
                   {"--log-line-prefix", "prog"},
                   {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "b"}},
                   "[rank${rank}]:"},
        PrefixCase{"EnvTemplateOverEnvShorthand",
                   {"prog"},
                   {{"COACH_LOG_LINE_PREFIX", "1"}, {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "b"}},
                   "b"}),
    [](const testing::TestParamInfo<PrefixCase>& info) { return info.param.name; });

TEST(LogLinePrefixTest, BadSwitchValueNamesTheVariable) {
  auto config = Parse({"prog"}, {{"COACH_LOG_LINE_PREFIX", "maybe"}});
  EXPECT_THAT(config.status().message(), HasSubstr("COACH_LOG_LINE_PREFIX: must be 1/true"));
}

TEST(LogLinePrefixTest, PrefixFlagsDoNotSelectTorchMode) {
  auto config = Parse({"--log-line-prefix", "prog"}, {{"TF_CONFIG", "{}"}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->mode, LaunchMode::kSingle);
}

TEST(HostWaitConfigTest, RecognizedOnlyBeforeTheSeparator) {
  EXPECT_TRUE(IsHostWaitInvocation({"--wait-for-host", "a"}));
  EXPECT_TRUE(IsHostWaitInvocation({"--peer-timeout=1s", "--wait_for_host=a"}));
  EXPECT_FALSE(IsHostWaitInvocation({"prog", "x"}));
  EXPECT_FALSE(IsHostWaitInvocation({"--", "prog", "--wait-for-host", "a"}));
}

TEST(HostWaitConfigTest, HostsInOrderAndTimeout) {
  auto c = ParseHostWaitConfig({"--wait-for-host", "job-master-0.job", "--wait-for-host=10.0.0.7",
                                "--peer-timeout", "90s", "--wait_for_host", "svc.ns.svc."});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->hosts, ElementsAre("job-master-0.job", "10.0.0.7", "svc.ns.svc."));
  EXPECT_EQ(c->timeout, absl::Seconds(90));
  c = ParseHostWaitConfig({"--wait-for-host=a_b"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->timeout, absl::Seconds(300));  // the --peer-timeout default
}

TEST(HostWaitConfigTest, BadInputNamesTheFlag) {
  const std::string label(64, 'a');
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--wait-for-host="}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host", ""}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host", "a b"}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host", "http://a"}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host", "a..b"}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host", "$(reboot)"}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host", label + ".x"}, "--wait-for-host: must be a DNS name"},
      {{"--wait-for-host"}, "--wait-for-host needs a value"},
      {{"--wait-for-host", "a", "--peer-timeout", "soon"}, "--peer-timeout: must be a duration"},
      {{"--wait-for-host", "a", "--peer-timeout=0"}, "--peer-timeout: must be a finite duration"},
      {{"--wait-for-host", "a", "--nproc-per-node=2"}, "only --wait-for-host HOST and"},
      {{"--wait-for-host", "a", "prog"}, "got \"prog\""},
      {{"--peer-timeout=1s"}, "at least one HOST"},
  };
  for (const auto& [args, want] : cases) {
    auto c = ParseHostWaitConfig(args);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << args.back();
    EXPECT_THAT(c.status().message(), HasSubstr(want)) << args.back();
  }
}

}  // namespace
}  // namespace coach::launcher
