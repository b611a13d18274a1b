#include "launcher/supervisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/time/clock.h"
#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::string TmpDir(const std::string& name) { return ::coach::testing::FreshTestDir(name); }

WorkerSpec Sh(int rank, const std::string& script, EnvMap env = {}) {
  env.emplace("PATH", "/usr/bin:/bin");
  return WorkerSpec{rank, rank, {"/bin/sh", "-c", script}, env};
}

struct Outcome {
  SupervisionResult result;
  std::vector<std::string> log;
  absl::Duration took;
};

Outcome Supervise(const std::vector<WorkerSpec>& workers, absl::Duration grace = absl::Seconds(5),
                  const StopRequest* stop = nullptr) {
  Outcome run;
  SupervisorOptions options;
  options.grace_period = grace;
  options.stop = stop;
  options.stop_poll = absl::Milliseconds(20);
  options.log = [&run](const std::string& l) { run.log.push_back(l); };
  const absl::Time start = absl::Now();
  auto result = coach::launcher::Supervise(workers, options);
  run.took = absl::Now() - start;
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) run.result = *result;
  return run;
}

int CodeOf(const Outcome& run, int rank) {
  for (const WorkerExit& e : run.result.exits) {
    if (e.rank == rank) return e.exit_code;
  }
  return -1;
}

TEST(SuperviseTest, AllSucceed) {
  Outcome run = Supervise({WorkerSpec{0, 0, {"/bin/true"}, {}}, WorkerSpec{1, 1, {"/bin/true"}, {}},
                           Sh(2, "sleep 0.2; exit 0")});
  EXPECT_EQ(run.result.exit_code, 0);
  ASSERT_EQ(run.result.exits.size(), 3u);
  EXPECT_EQ(run.log.size(), 3u);
  EXPECT_THAT(run.log.back(), HasSubstr("rank 2 (local 2, pid "));
  EXPECT_THAT(run.log.back(), HasSubstr("exited with code 0 after 0."));
}

TEST(SuperviseTest, OneFailsOthersAreTerminatedAndItsCodeWins) {
  Outcome run =
      Supervise({Sh(0, "exec sleep 30"), Sh(1, "sleep 0.2; exit 3"), Sh(2, "exec sleep 30")});
  EXPECT_EQ(run.result.exit_code, 3);
  EXPECT_EQ(CodeOf(run, 1), 3);
  EXPECT_EQ(CodeOf(run, 0), 128 + SIGTERM);
  EXPECT_EQ(CodeOf(run, 2), 128 + SIGTERM);
  EXPECT_LT(run.took, absl::Seconds(4));  // not the 30 s the others would sleep
  EXPECT_THAT(run.log[0], HasSubstr("rank 1 (local 1"));
  EXPECT_THAT(run.log[0], HasSubstr("exited with code 3"));
}

TEST(SuperviseTest, FalseGivesOne) {
  Outcome run = Supervise({WorkerSpec{0, 0, {"/bin/false"}, {}}});
  EXPECT_EQ(run.result.exit_code, 1);
}

TEST(SuperviseTest, KilledBySigkillIs137) {
  Outcome run = Supervise({Sh(0, "kill -KILL $$"), Sh(1, "exec sleep 30")});
  EXPECT_EQ(run.result.exit_code, 137);
  ASSERT_FALSE(run.result.exits.empty());
  EXPECT_EQ(run.result.exits[0].term_signal, SIGKILL);
  EXPECT_THAT(run.log[0], HasSubstr("killed by signal 9"));
  EXPECT_THAT(run.log[0], HasSubstr("code 137"));
}

TEST(SuperviseTest, GraceIsRespectedThenKilled) {
  const std::string dir = TmpDir("grace");
  // Rank 0 ignores SIGTERM (so does its sleep, which inherits the ignore) and must be SIGKILLed
  // after the grace period; rank 1 fails to trigger the stop.
  Outcome run =
      Supervise({Sh(0, "trap '' TERM; touch " + dir + "/ready; while :; do sleep 0.05; done"),
                 Sh(1, "while [ ! -e " + dir + "/ready ]; do sleep 0.02; done; exit 4")},
                absl::Milliseconds(800));
  EXPECT_EQ(run.result.exit_code, 4);
  EXPECT_EQ(CodeOf(run, 0), 137);
  EXPECT_GE(run.took, absl::Milliseconds(800));
  EXPECT_LT(run.took, absl::Seconds(4));
}

TEST(SuperviseTest, AStoppedWorkerActsOnSigtermAtOnce) {
  const std::string dir = TmpDir("stopped");
  // Rank 0 stops itself (SIGSTOP, state T); rank 1 fails once it sees that. Rank 0 ends by the
  // SIGTERM (continued), not by the SIGKILL at the end of the grace period.
  Outcome run = Supervise({Sh(0, "echo $$ > " + dir + "/pid.tmp; mv " + dir + "/pid.tmp " + dir +
                                     "/pid; kill -STOP $$; exec sleep 30"),
                           Sh(1, "while [ ! -s " + dir + "/pid ]; do sleep 0.02; done; " +
                                     "while ! grep -q '^[0-9]* ([^)]*) T' /proc/$(cat " + dir +
                                     "/pid)/stat; do sleep 0.02; done; exit 4")},
                          absl::Seconds(20));
  EXPECT_EQ(run.result.exit_code, 4);
  EXPECT_EQ(CodeOf(run, 0), 128 + SIGTERM);
  EXPECT_LT(run.took, absl::Seconds(10));
}

TEST(SuperviseTest, WholeProcessGroupIsStopped) {
  const std::string dir = TmpDir("group");
  // The worker's own child (a background sleep) must go too.
  Outcome run = Supervise({Sh(0, "sleep 30 & echo $! > " + dir + "/bg; wait"),
                           Sh(1, "while [ ! -s " + dir + "/bg ]; do sleep 0.02; done; exit 5")},
                          absl::Seconds(2));
  EXPECT_EQ(run.result.exit_code, 5);
  std::ifstream in(dir + "/bg");
  pid_t bg = 0;
  in >> bg;
  ASSERT_GT(bg, 0);
  absl::SleepFor(absl::Milliseconds(200));
  std::ifstream stat("/proc/" + std::to_string(bg) + "/stat");
  std::string pid, comm, state;
  if (stat >> pid >> comm >> state) {
    EXPECT_EQ(state, "Z") << "background sleep still running";
  }
}

TEST(SuperviseTest, ChildGetsExactlyItsEnv) {
  const std::string dir = TmpDir("env");
  const EnvMap env = {{"RANK", "7"}, {"ONLY", "this"}, {"WITH SPACE", "a b=c"}};
  Outcome run = Supervise({WorkerSpec{7, 0, {"launcher/testdata/env_dump", dir}, env}});
  ASSERT_EQ(run.result.exit_code, 0) << (run.log.empty() ? "" : run.log[0]);
  std::ifstream in(dir + "/env.7");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_THAT(lines, UnorderedElementsAre("RANK=7", "ONLY=this", "WITH SPACE=a b=c"));
}

TEST(SuperviseTest, MissingProgramIs127) {
  Outcome run = Supervise({WorkerSpec{0, 0, {"/nonexistent/coach-program"}, {}}});
  EXPECT_EQ(run.result.exit_code, 127);
}

TEST(SuperviseTest, ArgumentsAreNotInterpretedByAShell) {
  const std::string dir = TmpDir("argv");
  const std::string marker = dir + "/should-not-exist";
  Outcome run = Supervise(
      {WorkerSpec{0, 0, {"/bin/echo", "$(touch " + marker + ")", ";", "touch", marker}, {}}});
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

// Another thread asks for the stop once every file of `ready` exists.
void RequestStopWhenReady(StopRequest& stop, const std::vector<std::string>& ready) {
  for (const std::string& f : ready) {
    while (access(f.c_str(), F_OK) != 0) absl::SleepFor(absl::Milliseconds(10));
  }
  stop.Request("the operator restarts the job in place as attempt 2");
}

TEST(SuperviseTest, AStopRequestStopsEveryWorkerAndIsNoFailure) {
  const std::string dir = TmpDir("stop-request");
  StopRequest stop;
  std::thread requester(RequestStopWhenReady, std::ref(stop),
                        std::vector<std::string>{dir + "/ready0", dir + "/ready"});
  // Rank 1 exits by itself with 0 and is reaped (its /proc entry gone) before the stop; ranks 0
  // and 2 answer SIGTERM with codes of their own, which are not the launcher's.
  const std::string pid1 = dir + "/pid1";
  Outcome run = Supervise(
      {Sh(0, "trap 'exit 7' TERM; touch " + dir + "/ready0; while :; do sleep 0.05; done"),
       Sh(1, "echo $$ > " + pid1 + ".tmp; mv " + pid1 + ".tmp " + pid1),
       Sh(2, "trap 'exit 1' TERM; while [ ! -s " + pid1 + " ]; do sleep 0.02; done; " +
                 "while [ -e /proc/$(cat " + pid1 + ") ]; do sleep 0.02; done; touch " + dir +
                 "/ready; while :; do sleep 0.05; done")},
      absl::Seconds(5), &stop);
  requester.join();
  EXPECT_TRUE(run.result.stopped_on_request);
  EXPECT_EQ(run.result.exit_code, 128 + SIGTERM);
  EXPECT_EQ(CodeOf(run, 0), 7);
  EXPECT_EQ(CodeOf(run, 1), 0);
  EXPECT_EQ(CodeOf(run, 2), 1);
  EXPECT_LT(run.took, absl::Seconds(4));
  std::vector<std::string> stops;
  for (const std::string& l : run.log) {
    if (l.find("; stopping ") != std::string::npos) stops.push_back(l);
  }
  EXPECT_THAT(stops,
              ::testing::ElementsAre(
                  "coach-launch: the operator restarts the job in place as attempt 2; stopping 2 "
                  "worker(s) (grace 5s)"));
}

TEST(SuperviseTest, AStopRequestKillsAfterTheGracePeriod) {
  const std::string dir = TmpDir("stop-grace");
  StopRequest stop;
  std::thread requester(RequestStopWhenReady, std::ref(stop),
                        std::vector<std::string>{dir + "/ready"});
  Outcome run =
      Supervise({Sh(0, "trap '' TERM; touch " + dir + "/ready; while :; do sleep 0.05; done")},
                absl::Milliseconds(500), &stop);
  requester.join();
  EXPECT_TRUE(run.result.stopped_on_request);
  EXPECT_EQ(run.result.exit_code, 128 + SIGTERM);
  EXPECT_EQ(CodeOf(run, 0), 137);
  EXPECT_GE(run.took, absl::Milliseconds(500));
  EXPECT_LT(run.took, absl::Seconds(4));
}

TEST(SuperviseTest, AFailureBeforeTheStopRequestKeepsItsCode) {
  StopRequest stop;
  Outcome run = Supervise({Sh(0, "exec sleep 30"), Sh(1, "exit 6")}, absl::Seconds(5), &stop);
  stop.Request("too late");
  EXPECT_FALSE(run.result.stopped_on_request);
  EXPECT_EQ(run.result.exit_code, 6);
  // A request made before any worker starts stops them at once: none is started.
  StopRequest early;
  early.Request("early");
  Outcome none = Supervise({Sh(0, "exec sleep 30")}, absl::Seconds(5), &early);
  EXPECT_TRUE(none.result.stopped_on_request);
  EXPECT_TRUE(none.result.exits.empty());
  EXPECT_LT(none.took, absl::Seconds(2));
}

// A checkpoint request's SIGUSR1: to the worker process named, as long as it is that worker;
// not to a child in its process group (it would die of it), nor to another local rank.
TEST(SuperviseTest, AWorkerSignalReachesOnlyTheWorkerItNames) {
  const std::string dir = TmpDir("worker-signal");
  WorkerSignals signals;
  std::thread sender([&signals, dir] {
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (access((dir + "/pids").c_str(), F_OK) != 0 && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    pid_t worker = 0, child = 0;
    std::ifstream(dir + "/pids") >> worker >> child;
    signals.Send(0, child, SIGUSR1, "checkpoint request 3");
    signals.Send(1, worker, SIGUSR1, "checkpoint request 3");
    signals.Send(0, worker, SIGUSR1, "checkpoint request 3");
  });
  SupervisorOptions options;
  options.signals = &signals;
  options.stop_poll = absl::Milliseconds(20);
  std::vector<std::string> log;
  options.log = [&log](const std::string& l) { log.push_back(l); };
  auto result = coach::launcher::Supervise(
      {Sh(0, "trap 'touch " + dir + "/got' USR1; sleep 30 & child=$!; echo $$ $child > " + dir +
                 "/pids.tmp; mv " + dir + "/pids.tmp " + dir + "/pids; " + "while [ ! -e " + dir +
                 "/got ]; do sleep 0.02; done; " +
                 "kill -0 $child && kill $child && exit 0; exit 5"),
       Sh(1, "sleep 0.5")},
      options);
  sender.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  std::vector<std::string> lines;
  for (const std::string& l : log) {
    if (l.find("checkpoint request 3") != std::string::npos) lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 3u) << ::testing::PrintToString(log);
  EXPECT_THAT(lines[0], ::testing::MatchesRegex("coach-launch: checkpoint request 3: local rank 0 "
                                                "does not run as pid [0-9]+; not signalled"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex("coach-launch: checkpoint request 3: local rank 1 "
                                                "does not run as pid [0-9]+; not signalled"));
  EXPECT_THAT(lines[2], ::testing::MatchesRegex("coach-launch: checkpoint request 3: SIGUSR1 to "
                                                "rank 0 \\(local 0, pid [0-9]+\\)"));
}

TEST(SuperviseTest, RejectsEmptyInput) {
  SupervisorOptions options;
  EXPECT_EQ(coach::launcher::Supervise({}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(coach::launcher::Supervise({WorkerSpec{}}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coach::launcher
