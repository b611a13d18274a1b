#include "launcher/attempt_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <string>

#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

TEST(AttemptRunnerTest, EachAttemptsWorkersSeeItsNumberWhateverThePodSaid) {
  WorkerSpec spec{3, 1, {"x"}, {{"COACH_ATTEMPT", "0"}, {"TORCHELASTIC_RESTART_COUNT", "0"}}};
  WorkerSpec second = ForAttempt(spec, 2);
  EXPECT_EQ(second.env.at("COACH_ATTEMPT"), "2");
  EXPECT_EQ(second.env.at("TORCHELASTIC_RESTART_COUNT"), "2");
  EXPECT_EQ(second.rank, 3);
  EXPECT_EQ(ForAttempt(WorkerSpec{}, 7).env.at("TORCHELASTIC_RESTART_COUNT"), "7");
}

TEST(AttemptRunnerTest, RunsTheWorkersOfTheAttempt) {
  const std::string dir = ::coach::testing::FreshTestDir("attempt-runner");
  std::vector<WorkerSpec> workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.push_back(WorkerSpec{rank,
                                 rank,
                                 {"/bin/sh", "-c",
                                  "echo $COACH_ATTEMPT $TORCHELASTIC_RESTART_COUNT > " + dir +
                                      "/rank" + std::to_string(rank)},
                                 {{"PATH", "/usr/bin:/bin"}, {"COACH_ATTEMPT", "0"}}});
  }
  SupervisorOptions options;
  options.log = [](const std::string&) {};
  std::unique_ptr<AttemptRunner> runner = NewProcessAttemptRunner(workers, options);
  StopRequest stop;
  absl::StatusOr<SupervisionResult> result = runner->Run(5, stop);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_code, 0);
  for (int rank = 0; rank < 2; ++rank) {
    std::ifstream in(dir + "/rank" + std::to_string(rank));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "5 5");
  }
}

TEST(AttemptRunnerTest, WaitForSignalTakesAPendingSigterm) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
  std::unique_ptr<AttemptRunner> runner = NewProcessAttemptRunner({}, SupervisorOptions{});
  EXPECT_EQ(runner->WaitForSignal(absl::Milliseconds(20)), 0);
  raise(SIGTERM);
  EXPECT_EQ(runner->WaitForSignal(absl::Seconds(5)), SIGTERM);
  EXPECT_EQ(runner->WaitForSignal(absl::Milliseconds(20)), 0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
}  // namespace coach::launcher
