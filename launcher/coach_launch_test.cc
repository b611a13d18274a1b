// End-to-end tests of the coach-launch binary: real processes, real signals, real exit codes.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/testing/test_dir.h"
#include "launcher/testing/spawn.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Env = std::map<std::string, std::string>;

constexpr char kLauncher[] = "launcher/coach-launch";
constexpr char kEnvDump[] = "launcher/testdata/env_dump";
constexpr char kLineWriter[] = "launcher/testdata/line_writer";

std::string TmpDir(const std::string& name) { return ::coach::testing::FreshTestDir(name); }

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
  // Starts coach-launch with exactly `env`; its stdout and stderr go to files.
  Launcher(const std::vector<std::string>& args, Env env, const std::string& name) {
    stderr_path_ = TmpDir("stderr") + "/" + name;
    stdout_path_ = TmpDir("stdout") + "/" + name;
    start_ = absl::Now();
    pid_ = coach::launcher::testing::Spawn(kLauncher, args, std::move(env), stderr_path_,
                                           stdout_path_);
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
  std::string Stdout() const { return ReadFile(stdout_path_); }
  absl::Duration took() const { return took_; }

 private:
  pid_t pid_ = -1;
  bool waited_ = false;
  std::string stderr_path_;
  std::string stdout_path_;
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
  const Env input = {{"PATH", "/usr/bin:/bin"},
                     {"PET_NNODES", "2"},
                     {"PET_NODE_RANK", "0"},
                     {"PET_NPROC_PER_NODE", "2"},
                     {"PET_MASTER_ADDR", "127.0.0.1"},
                     {"PET_MASTER_PORT", "1234"},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", "1234"},
                     {"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"PYTHONUNBUFFERED", "1"},
                     {"PET_RDZV_ID", "job-uid"}};
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

// The state letter of /proc/<pid>/stat ("" when there is no such process).
std::string ProcState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string p, comm, state;
  if (!(stat >> p >> comm >> state)) return "";
  return state;
}

TEST(CoachLaunchTest, SigtermReachesAStoppedWorkerAtOnce) {
  // The pod deleted while its worker is stopped (SIGSTOP): the worker ends by the SIGTERM the
  // launcher forwards (and continues), not by the SIGKILL at the end of the grace period.
  const std::string dir = TmpDir("stopped");
  Launcher l({"--nproc-per-node=1", "--grace-period=20s", "--", "/bin/sh", "-c",
              "echo $$ > " + dir + "/pid.tmp; mv " + dir + "/pid.tmp " + dir +
                  "/pid; kill -STOP $$; exit 0"},
             {}, "stopped");
  ASSERT_TRUE(WaitForFile(dir + "/pid"));
  pid_t worker = 0;
  std::istringstream(ReadFile(dir + "/pid")) >> worker;
  ASSERT_GT(worker, 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (ProcState(worker) != "T" && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  ASSERT_EQ(ProcState(worker), "T");
  const absl::Time sent = absl::Now();
  l.Signal(SIGTERM);
  EXPECT_EQ(l.Wait(), 128 + SIGTERM);
  EXPECT_LT(absl::Now() - sent, absl::Seconds(10));
  EXPECT_THAT(l.Stderr(), Not(HasSubstr("grace period over")));
  EXPECT_THAT(l.Stderr(), HasSubstr("killed by signal 15"));
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
             {{"PET_NNODES", "2"},
              {"PET_NODE_RANK", "1"},
              {"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", "1"}},
             "peer_timeout");
  EXPECT_EQ(l.Wait(), 1);
  EXPECT_GE(l.took(), absl::Seconds(1));
  EXPECT_THAT(l.Stderr(), HasSubstr("peer 127.0.0.1:1 (from MASTER_ADDR) not accepting"));
}

TEST(CoachLaunchTest, NoWaitSkipsPeers) {
  Launcher l({"--no-wait", "/bin/true"},
             {{"PET_NNODES", "2"},
              {"PET_NODE_RANK", "1"},
              {"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", "1"}},
             "no_wait");
  EXPECT_EQ(l.Wait(), 0);
}

TEST(CoachLaunchTest, HelpExitsZero) {
  Launcher l({"--help"}, {}, "help");
  EXPECT_EQ(l.Wait(), 0);
}

// ---- Output forwarding: every line of every worker whole (line_writer writes each line in
// several write() calls, yielding the CPU between them).

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// What line_writer writes as line `i` of `rank` on `tag` (out|err), without '\n'.
std::string WriterLine(const std::string& tag, int rank, int i) {
  char num[16];
  std::snprintf(num, sizeof(num), "%05d", i);
  return tag + " " + std::to_string(rank) + " line " + num + " " + std::string(20 + i % 50, 'x') +
         " end";
}

// Checks that `lines` hold exactly `per_rank` writer lines of each of `ranks` ranks, whole and
// in each rank's order, each after the prefix `prefix(rank)`; other lines are returned.
std::vector<std::string> CheckWriterLines(const std::vector<std::string>& lines,
                                          const std::string& tag, int ranks, int per_rank,
                                          const std::function<std::string(int)>& prefix) {
  std::vector<int> next(ranks, 0);
  std::vector<std::string> others;
  int bad = 0;
  for (const std::string& line : lines) {
    bool matched = false;
    for (int r = 0; r < ranks && !matched; ++r) {
      if (next[r] < per_rank && line == prefix(r) + WriterLine(tag, r, next[r])) {
        ++next[r];
        matched = true;
      }
    }
    if (matched) continue;
    others.push_back(line);
    if (line.find(" line ") != std::string::npos && ++bad <= 5) {
      ADD_FAILURE() << "spliced or misplaced line: " << line.substr(0, 200);
    }
  }
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(next[r], per_rank) << tag << " rank " << r;
  return others;
}

std::string NoPrefix(int) { return ""; }

TEST(CoachLaunchOutputTest, FourRanksOfPartialWritesComeOutAsWholeLines) {
  Launcher l({"--nproc-per-node=4", "--", kLineWriter, "--lines", "3000", "--stderr-lines", "300"},
             {}, "whole_lines");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  const std::vector<std::string> out = Lines(l.Stdout());
  EXPECT_EQ(out.size(), 12000u);
  EXPECT_THAT(CheckWriterLines(out, "out", 4, 3000, NoPrefix), testing::IsEmpty());
  // stderr holds the workers' stderr lines (and none of their stdout) plus the launcher's own.
  for (const std::string& other : CheckWriterLines(Lines(l.Stderr()), "err", 4, 300, NoPrefix)) {
    EXPECT_THAT(other, testing::StartsWith("coach-launch: "));
  }
}

TEST(CoachLaunchOutputTest, RankPrefixesOnEveryLineWhenAskedFor) {
  Launcher l({"--nproc-per-node=3", "--log-line-prefix", "--", kLineWriter, "--lines", "500",
              "--stderr-lines", "50"},
             {}, "prefixes");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  auto prefix = [](int r) { return "[rank" + std::to_string(r) + "]:"; };
  EXPECT_THAT(CheckWriterLines(Lines(l.Stdout()), "out", 3, 500, prefix), testing::IsEmpty());
  for (const std::string& other : CheckWriterLines(Lines(l.Stderr()), "err", 3, 50, prefix)) {
    EXPECT_THAT(other, testing::StartsWith("coach-launch: "));  // the launcher's: unprefixed
  }
}

TEST(CoachLaunchOutputTest, TorchrunTemplateFromTheEnvironment) {
  // Node 1 of 2 with 2 workers: global ranks 2 and 3, local ranks 0 and 1.
  Launcher l({"--no-wait", "--", kLineWriter, "--lines", "100"},
             {{"PET_NNODES", "2"},
              {"PET_NODE_RANK", "1"},
              {"PET_NPROC_PER_NODE", "2"},
              {"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", "1"},
              {"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "[${role_name}${local_rank}|${rank}]:"}},
             "template");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  std::vector<std::string> out = Lines(l.Stdout());
  ASSERT_EQ(out.size(), 200u);
  int seen2 = 0, seen3 = 0;
  for (const std::string& line : out) {
    if (line.rfind("[default0|2]:out 2 line ", 0) == 0) ++seen2;
    if (line.rfind("[default1|3]:out 3 line ", 0) == 0) ++seen3;
  }
  EXPECT_EQ(seen2, 100);
  EXPECT_EQ(seen3, 100);
}

TEST(CoachLaunchOutputTest, PrefixesAreOffByDefaultAndCoachLogLinePrefixTurnsThemOn) {
  Launcher off({"--nproc-per-node=2", "--", kLineWriter, "--lines", "10"}, {}, "prefix_off");
  ASSERT_EQ(off.Wait(), 0) << off.Stderr();
  EXPECT_THAT(CheckWriterLines(Lines(off.Stdout()), "out", 2, 10, NoPrefix), testing::IsEmpty());
  Launcher on({"--nproc-per-node=2", "--", kLineWriter, "--lines", "10"},
              {{"COACH_LOG_LINE_PREFIX", "1"}}, "prefix_env");
  ASSERT_EQ(on.Wait(), 0) << on.Stderr();
  auto prefix = [](int r) { return "[rank" + std::to_string(r) + "]:"; };
  EXPECT_THAT(CheckWriterLines(Lines(on.Stdout()), "out", 2, 10, prefix), testing::IsEmpty());
}

TEST(CoachLaunchOutputTest, HalfALineThenASleepStaysOneLineAndTailsAreDelivered) {
  // Each rank writes half a line, sleeps while the others write, then the rest; at the end a
  // tail without '\n'.
  Launcher l({"--nproc-per-node=3", "--", kLineWriter, "--lines", "200", "--slow",
              "slow-half-and-rest", "--lines", "200", "--tail", "last words of"},
             {}, "slow");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  const std::vector<std::string> others =
      CheckWriterLines(Lines(l.Stdout()), "out", 3, 400, NoPrefix);
  EXPECT_THAT(others, testing::UnorderedElementsAre("slow-half-and-rest 0", "slow-half-and-rest 1",
                                                    "slow-half-and-rest 2", "last words of 0",
                                                    "last words of 1", "last words of 2"));
}

TEST(CoachLaunchOutputTest, ALineLongerThan64KiBArrivesIntact) {
  Launcher l({kLineWriter, "--long", "300000", "--tail", "end"}, {}, "long");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  EXPECT_EQ(l.Stdout(), std::string(300000, 'L') + "\nend 0\n");
}

TEST(CoachLaunchOutputTest, StdoutAndStderrStayApartInSingleMode) {
  Launcher l({"/bin/sh", "-c", "echo to-out; echo to-err >&2; printf 'no newline'"}, {}, "streams");
  ASSERT_EQ(l.Wait(), 0) << l.Stderr();
  EXPECT_EQ(l.Stdout(), "to-out\nno newline\n");
  const std::vector<std::string> err = Lines(l.Stderr());
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err[0], "to-err");
  for (size_t i = 1; i < err.size(); ++i) {
    EXPECT_THAT(err[i], testing::StartsWith("coach-launch: "));
  }
}

// ---- DNS-wait mode (an init container's job).

TEST(CoachLaunchWaitForHostTest, LocalhostResolvesAtOnce) {
  Launcher l({"--wait-for-host", "localhost", "--wait-for-host=127.0.0.1"}, {}, "dns_ok");
  EXPECT_EQ(l.Wait(), 0) << l.Stderr();
}

TEST(CoachLaunchWaitForHostTest, AnInvalidNameTimesOutWithExit1NamingIt) {
  Launcher l({"--wait-for-host", "localhost", "--wait-for-host", "no-such-host.invalid",
              "--peer-timeout=1s"},
             {}, "dns_timeout");
  EXPECT_EQ(l.Wait(), 1);
  const std::string err = l.Stderr();
  EXPECT_THAT(err, HasSubstr("waiting for no-such-host.invalid to resolve"));
  EXPECT_THAT(err, HasSubstr("not resolvable after"));
  EXPECT_THAT(err, HasSubstr("no-such-host.invalid ("));
  EXPECT_THAT(err, testing::Not(HasSubstr("localhost (")));
}

TEST(CoachLaunchWaitForHostTest, BadInputIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--wait-for-host="},
        std::vector<std::string>{"--wait-for-host", "bad host"},
        std::vector<std::string>{"--wait-for-host", "a;b"},
        std::vector<std::string>{"--wait-for-host", "a", "--", "/bin/true"}}) {
    Launcher l(args, {}, "dns_bad");
    EXPECT_EQ(l.Wait(), 2) << args.back();
    EXPECT_THAT(l.Stderr(), HasSubstr("coach-launch: ")) << args.back();
  }
}

}  // namespace
