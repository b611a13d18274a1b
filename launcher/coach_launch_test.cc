// End-to-end tests of the coach-launch binary: real processes, real signals, real exit codes.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace {

using ::testing::HasSubstr;
using Env = std::map<std::string, std::string>;

constexpr char kLauncher[] = "launcher/coach-launch";
constexpr char kEnvDump[] = "launcher/testdata/env_dump";

std::string TmpDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

bool WaitForFile(const std::string& path, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (Exists(path)) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

class Launcher {
 public:
  // Starts coach-launch with exactly `env`; its stderr goes to a file.
  Launcher(const std::vector<std::string>& args, Env env, const std::string& name) {
    env.emplace("PATH", "/usr/bin:/bin");
    stderr_path_ = TmpDir("stderr") + "/" + name;
    std::vector<std::string> argv_s = {kLauncher};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    start_ = absl::Now();
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(stderr_path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
      dup2(fd, STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(99);
    }
  }
  ~Launcher() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
  }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    waited_ = true;
    took_ = absl::Now() - start_;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  void Signal(int sig) { kill(pid_, sig); }
  std::string Stderr() const { return ReadFile(stderr_path_); }
  absl::Duration took() const { return took_; }

 private:
  pid_t pid_ = -1;
  bool waited_ = false;
  std::string stderr_path_;
  absl::Time start_;
  absl::Duration took_;
};

Env ParseEnvDump(const std::string& text) {
  Env env;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

TEST(CoachLaunchTest, WorkersGetTorchrunEnvOverTheOperatorsEnv) {
  const std::string dir = TmpDir("torch_env");
  const Env input = {{"PATH", "/usr/bin:/bin"},     {"PET_NNODES", "2"},
                     {"PET_NODE_RANK", "0"},        {"PET_NPROC_PER_NODE", "2"},
                     {"PET_MASTER_ADDR", "127.0.0.1"}, {"PET_MASTER_PORT", "1234"},
                     {"MASTER_ADDR", "127.0.0.1"},  {"MASTER_PORT", "1234"},
                     {"RANK", "0"},                 {"WORLD_SIZE", "2"},
                     {"PYTHONUNBUFFERED", "1"},     {"PET_RDZV_ID", "job-uid"}};
  Launcher l({"--", kEnvDump, dir}, input, "torch_env");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  for (int rank : {0, 1}) {
    Env expected = input;
    const std::string r = std::to_string(rank);
    expected["LOCAL_RANK"] = r;
    expected["RANK"] = r;
    expected["WORLD_SIZE"] = "4";
    expected["LOCAL_WORLD_SIZE"] = "2";
    expected["GROUP_RANK"] = "0";
    expected["GROUP_WORLD_SIZE"] = "2";
    expected["ROLE_RANK"] = r;
    expected["ROLE_WORLD_SIZE"] = "4";
    expected["ROLE_NAME"] = "default";
    expected["TORCHELASTIC_RESTART_COUNT"] = "0";
    expected["TORCHELASTIC_MAX_RESTARTS"] = "0";
    expected["TORCHELASTIC_RUN_ID"] = "job-uid";
    expected["OMP_NUM_THREADS"] = "1";
    EXPECT_EQ(ParseEnvDump(ReadFile(dir + "/env." + r)), expected) << "rank " << rank;
  }
  EXPECT_THAT(l.Stderr(), HasSubstr("rank 1 (local 1, pid "));
}

TEST(CoachLaunchTest, SingleModeLeavesEnvUntouched) {
  const std::string dir = TmpDir("single_env");
  const Env input = {{"PATH", "/usr/bin:/bin"}, {"FOO", "bar baz"}, {"TF_CONFIG", "{}"}};
  Launcher l({kEnvDump, dir}, input, "single_env");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  EXPECT_EQ(ParseEnvDump(ReadFile(dir + "/env.single")), input);
}

TEST(CoachLaunchTest, FailingWorkerCodeIsTheLaunchersAndOthersStop) {
  Launcher l({"--nproc-per-node=3", "--grace-period=5s", "--", "/bin/sh", "-c",
              "if [ \"$RANK\" = 1 ]; then sleep 0.2; exit 3; fi; exec sleep 30"},
             {}, "fail3");
  EXPECT_EQ(l.Wait(), 3);
  EXPECT_LT(l.took(), absl::Seconds(5));
  const std::string err = l.Stderr();
  EXPECT_THAT(err, HasSubstr("rank 1 (local 1"));
  EXPECT_THAT(err, HasSubstr("exited with code 3"));
  EXPECT_THAT(err, HasSubstr("rank 0 (local 0"));
  EXPECT_THAT(err, HasSubstr("killed by signal 15"));
}

TEST(CoachLaunchTest, WorkerKilledBySigkillGives137) {
  Launcher l({"--nproc-per-node=2", "/bin/sh", "-c",
              "if [ \"$LOCAL_RANK\" = 0 ]; then kill -KILL $$; fi; exec sleep 30"},
             {}, "kill9");
  EXPECT_EQ(l.Wait(), 137);
}

TEST(CoachLaunchTest, AllSucceedGivesZero) {
  Launcher l({"--nproc-per-node=4", "/bin/true"}, {}, "true");
  EXPECT_EQ(l.Wait(), 0);
}

TEST(CoachLaunchTest, SigtermIsForwardedToEveryWorker) {
  const std::string dir = TmpDir("sigterm");
  Launcher l({"--nproc-per-node=2", "--", "/bin/sh", "-c",
              "trap 'echo bye > " + dir + "/term.$LOCAL_RANK; exit 0' TERM; touch " + dir +
                  "/ready.$LOCAL_RANK; while :; do sleep 0.05; done"},
             {}, "sigterm");
  ASSERT_TRUE(WaitForFile(dir + "/ready.0"));
  ASSERT_TRUE(WaitForFile(dir + "/ready.1"));
  l.Signal(SIGTERM);
  EXPECT_EQ(l.Wait(), 128 + SIGTERM);  // workers exited 0; the launcher was terminated
  EXPECT_TRUE(Exists(dir + "/term.0"));
  EXPECT_TRUE(Exists(dir + "/term.1"));
  EXPECT_LT(l.took(), absl::Seconds(10));
}

TEST(CoachLaunchTest, GracePeriodThenSigkill) {
  const std::string dir = TmpDir("grace");
  Launcher l({"--nproc-per-node=2", "--grace-period=1s", "--", "/bin/sh", "-c",
              "trap '' TERM; touch " + dir + "/ready.$LOCAL_RANK; while :; do sleep 0.05; done"},
             {}, "grace");
  ASSERT_TRUE(WaitForFile(dir + "/ready.0"));
  ASSERT_TRUE(WaitForFile(dir + "/ready.1"));
  const absl::Time sent = absl::Now();
  l.Signal(SIGTERM);
  EXPECT_EQ(l.Wait(), 137);
  const absl::Duration after = absl::Now() - sent;
  EXPECT_GE(after, absl::Seconds(1));
  EXPECT_LT(after, absl::Seconds(5));
  EXPECT_THAT(l.Stderr(), HasSubstr("grace period over"));
}

bool Gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string p, comm, state;
  if (!(stat >> p >> comm >> state)) return true;
  return state == "Z";
}

TEST(CoachLaunchTest, NoOrphansWhenTheLauncherIsKilled) {
  const std::string dir = TmpDir("orphans");
  Launcher l({"--nproc-per-node=2", "--", "/bin/sh", "-c",
              "echo $$ > " + dir + "/pid.tmp.$LOCAL_RANK; mv " + dir + "/pid.tmp.$LOCAL_RANK " +
                  dir + "/pid.$LOCAL_RANK; exec sleep 30"},
             {}, "orphans");
  ASSERT_TRUE(WaitForFile(dir + "/pid.0"));
  ASSERT_TRUE(WaitForFile(dir + "/pid.1"));
  const pid_t w0 = std::stoi(ReadFile(dir + "/pid.0"));
  const pid_t w1 = std::stoi(ReadFile(dir + "/pid.1"));
  l.Signal(SIGKILL);
  l.Wait();
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  while ((!Gone(w0) || !Gone(w1)) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(Gone(w0));
  EXPECT_TRUE(Gone(w1));
}

TEST(CoachLaunchTest, BadConfigExits2NamingTheVariable) {
  Launcher l({"/bin/true"}, {{"PET_NPROC_PER_NODE", "x"}}, "badcfg");
  EXPECT_EQ(l.Wait(), 2);
  EXPECT_THAT(l.Stderr(),
              HasSubstr("PET_NPROC_PER_NODE: must be auto, cpu, gpu or a positive integer"));
}

TEST(CoachLaunchTest, UnreachableMasterExits1AfterPeerTimeout) {
  // Port 1 on loopback: nothing listens there in a test sandbox.
  Launcher l({"--peer-timeout=1s", "/bin/true"},
             {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", "1"}},
             "peer_timeout");
  EXPECT_EQ(l.Wait(), 1);
  EXPECT_GE(l.took(), absl::Seconds(1));
  EXPECT_THAT(l.Stderr(), HasSubstr("peer 127.0.0.1:1 (from MASTER_ADDR) not accepting"));
}

TEST(CoachLaunchTest, NoWaitSkipsPeers) {
  Launcher l({"--no-wait", "/bin/true"},
             {{"PET_NNODES", "2"}, {"PET_NODE_RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", "1"}},
             "no_wait");
  EXPECT_EQ(l.Wait(), 0);
}

TEST(CoachLaunchTest, HelpExitsZero) {
  Launcher l({"--help"}, {}, "help");
  EXPECT_EQ(l.Wait(), 0);
}

}  // namespace
