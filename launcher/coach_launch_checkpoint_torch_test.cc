// Checkpoint on notice with real PyTorch: coach-launch runs 2 ranks of
// examples/pytorch/ddp_train.py (gloo on the CPU, torch from the venv of tools/torch_env.sh)
// against launcher/testing/fake_operator.h. Once training reports progress the operator asks for
// a checkpoint; the ranks agree on one step, rank 0 saves, both answer, and the pod's answer
// reaches the operator. The pod is then stopped (as its node would be reclaimed), and a new run
// resumes from that mid-epoch checkpoint and ends with the very parameters of a run that was
// never stopped. Skips without the venv; under CI=true installs it (as e2e/local:torchrun_test).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/test_dir.h"
#include "launcher/testing/fake_operator.h"
#include "launcher/testing/spawn.h"

namespace {

using coach::launcher::testing::CheckpointRequestOf;
using coach::launcher::testing::FakeOperator;

constexpr char kLauncher[] = "launcher/coach-launch";
constexpr char kProgram[] = "examples/pytorch/ddp_train.py";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool InCi() {
  const char* ci = std::getenv("CI");
  const std::string v = ci == nullptr ? "" : absl::AsciiStrToLower(ci);
  return v == "true" || v == "1";
}

// The venv's python, or "" (why on stderr).
std::string TorchPython() {
  const std::string out = coach::testing::FreshTestDir("torch-env") + "/python";
  std::map<std::string, std::string> env = {
      {"HOME", std::getenv("HOME") ? std::getenv("HOME") : ""}};
  const pid_t pid = coach::launcher::testing::Spawn(
      "/bin/bash", {"launcher/testdata/torch_env.sh", InCi() ? "install" : "python"}, env,
      out + ".err", out);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string python(absl::StripAsciiWhitespace(Slurp(out)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || python.empty()) {
    std::fprintf(stderr, "no torch venv: %s\n", Slurp(out + ".err").c_str());
    return "";
  }
  return python.substr(python.rfind('\n') + 1);
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

struct Launched {
  pid_t pid = -1;
  std::string out, err;
};

Launched Start(const std::string& python, const std::vector<std::string>& train_args,
               std::map<std::string, std::string> env) {
  Launched r;
  const std::string dir = coach::testing::FreshTestDir("torch-run");
  r.out = dir + "/stdout";
  r.err = dir + "/stderr";
  std::vector<std::string> args = {"--nproc-per-node",
                                   "2",
                                   "--master-port",
                                   std::to_string(FreePort()),
                                   "--grace-period",
                                   "5s",
                                   "--",
                                   python,
                                   "-u",
                                   kProgram};
  args.insert(args.end(), train_args.begin(), train_args.end());
  env["GLOO_SOCKET_IFNAME"] = "lo";  // one host: gloo on loopback whatever the hostname says
  r.pid = coach::launcher::testing::Spawn(kLauncher, args, std::move(env), r.err, r.out);
  return r;
}

int Wait(const Launched& r) {
  int status = 0;
  waitpid(r.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The first match's group 1 in `text`, or "".
std::string Find(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : "";
}

TEST(CoachLaunchCheckpointTorchTest, RanksSaveAtOneStepOnNoticeAndAResumedRunEndsTheSame) {
  const std::string python = TorchPython();
  if (python.empty()) {
    if (InCi()) GTEST_FAIL() << "no torch venv under CI";
    GTEST_SKIP() << "no torch venv (tools/torch_env.sh install)";
  }
  const std::string work = coach::testing::FreshTestDir("torch-notice");

  // A run that is never stopped: the parameters to end with.
  Launched whole = Start(python, {"--epochs", "6", "--checkpoint-dir", work + "/whole"}, {});
  ASSERT_EQ(Wait(whole), 0) << Slurp(whole.err);
  const std::string want = Find(Slurp(whole.out), "rank=0 .*params_checksum=([0-9a-f]+)");
  ASSERT_FALSE(want.empty()) << Slurp(whole.out);

  // The noticed run: 3 s epochs, so that the pod can be stopped between the notice's checkpoint
  // and the next epoch's.
  FakeOperator op;
  const std::string token = work + "/token";
  std::ofstream(token) << "pod-token\n";
  std::map<std::string, std::string> env = {{"COACH_PROGRESS_ADDRESS", op.Serve()},
                                            {"COACH_PROGRESS_TOKEN_FILE", token},
                                            {"COACH_POD_NAMESPACE", "team-a"},
                                            {"COACH_POD_NAME", "ddp-worker-0"},
                                            {"TMPDIR", work}};
  const std::string dir = work + "/noticed";
  Launched noticed =
      Start(python, {"--epochs", "6", "--epoch-seconds", "3", "--checkpoint-dir", dir}, env);
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  auto progressed = [&op] {
    for (const auto& r : op.Requests()) {
      if (r.step() >= 1) return true;
    }
    return false;
  };
  while (!progressed() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_TRUE(progressed()) << Slurp(noticed.err);
  const int64_t id = absl::ToUnixMillis(absl::Now());
  op.SetCheckpoint(CheckpointRequestOf(id, absl::Now() + absl::Seconds(60)));
  while (op.CheckpointReports().empty() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  // The node goes.
  kill(noticed.pid, SIGTERM);
  EXPECT_EQ(Wait(noticed), 128 + SIGTERM);
  const std::string out = Slurp(noticed.out), err = Slurp(noticed.err);
  ASSERT_EQ(op.CheckpointReports().size(), 1u) << err;
  const coach::api::v1::CheckpointReport report = op.CheckpointReports()[0];
  EXPECT_EQ(report.request_id(), id);
  EXPECT_TRUE(report.saved()) << report.message();
  EXPECT_GT(report.step(), 0);
  EXPECT_NE(err.find("SIGUSR1 to rank 0 (local 0"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGUSR1 to rank 1 (local 1"), std::string::npos) << err;
  const std::string saved =
      Find(out, absl::StrCat("coach-checkpoint saved_on_notice request=", id,
                             " step=", report.step(), " epoch=([0-9]+) batch=[0-9]+"));
  ASSERT_FALSE(saved.empty()) << out;
  // What happened, for the log: the launcher's lines about the request, rank 0's save.
  for (const std::string& text : {err, out}) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("checkpoint") != std::string::npos) std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  // A new run resumes there, mid-epoch, and ends as the run never stopped did.
  Launched resumed = Start(python, {"--epochs", "6", "--checkpoint-dir", dir}, {});
  ASSERT_EQ(Wait(resumed), 0) << Slurp(resumed.err);
  const std::string resumed_out = Slurp(resumed.out);
  EXPECT_NE(resumed_out.find(absl::StrCat(
                "coach-checkpoint resumed_from_epoch=", std::stoi(saved) - 1, " batch=")),
            std::string::npos)
      << resumed_out;
  EXPECT_EQ(Find(resumed_out, "rank=0 .*params_checksum=([0-9a-f]+)"), want) << resumed_out;
  EXPECT_EQ(Find(resumed_out, "rank=1 .*params_checksum=([0-9a-f]+)"), want) << resumed_out;
  std::fprintf(stderr, "resumed: %s; params_checksum %s, unstopped run's %s\n",
               Find(resumed_out, "(coach-checkpoint resumed[^\n]*)").c_str(),
               Find(resumed_out, "rank=0 .*params_checksum=([0-9a-f]+)").c_str(), want.c_str());
}

}  // namespace
