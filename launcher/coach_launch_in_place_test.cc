// The coach-launch binary restarting its workers in place (COACH_RESTART_MODE=InPlace), against
// an in-process gRPC server standing in for the operator: it answers each progress report by
// the launch state it carries, as the test says, and records the states in order.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/v1/training_service.grpc.pb.h"
#include "common/testing/test_dir.h"
#include "launcher/testing/spawn.h"

namespace {

using coach::api::v1::LaunchState;
using coach::api::v1::ReportProgressRequest;
using coach::api::v1::ReportProgressResponse;

constexpr char kLauncher[] = "launcher/coach-launch";

std::string Describe(const LaunchState& s) {
  std::string d = absl::StrCat(s.attempt(), "/", LaunchState::Phase_Name(s.phase()));
  if (s.exit_code() != 0) absl::StrAppend(&d, "/", s.exit_code());
  return d;
}

ReportProgressResponse Directive(int attempt, bool start, bool exit) {
  ReportProgressResponse r;
  r.set_accepted(true);
  r.mutable_launch()->set_attempt(attempt);
  r.mutable_launch()->set_start(start);
  r.mutable_launch()->set_exit(exit);
  return r;
}

class FakeOperator : public coach::api::v1::TrainingService::Service {
 public:
  // The answer to a report in launch state "attempt/PHASE[/code]".
  using Answer = std::function<ReportProgressResponse(const std::string& state)>;

  explicit FakeOperator(Answer answer) : answer_(std::move(answer)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    token_ = coach::testing::FreshTestDir("in-place-token") + "/token";
    std::ofstream(token_) << "pod-token\n";
  }
  ~FakeOperator() override { server_->Shutdown(); }

  grpc::Status ReportProgress(grpc::ServerContext*, const ReportProgressRequest* request,
                              ReportProgressResponse* response) override {
    const std::string state = request->has_launch() ? Describe(request->launch()) : "none";
    std::lock_guard<std::mutex> lock(mu_);
    if (states_.empty() || states_.back() != state) states_.push_back(state);
    *response = answer_(state);
    return grpc::Status::OK;
  }

  // The launch states reported, each once in a row ("none" before the first).
  std::vector<std::string> States() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> states;
    for (const std::string& s : states_) {
      if (s != "none") states.push_back(s);
    }
    return states;
  }

  std::map<std::string, std::string> Env() const {
    return {{"COACH_PROGRESS_ADDRESS", absl::StrCat("127.0.0.1:", port_)},
            {"COACH_PROGRESS_TOKEN_FILE", token_},
            {"COACH_POD_NAMESPACE", "team-a"},
            {"COACH_POD_NAME", "ddp-worker-0"},
            {"COACH_RESTART_MODE", "InPlace"}};
  }

 private:
  Answer answer_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string token_;
  std::mutex mu_;
  std::vector<std::string> states_;
};

struct Launched {
  pid_t pid = -1;
  std::string err;
  absl::Time started;
};

Launched Start(const std::vector<std::string>& args, std::map<std::string, std::string> env) {
  Launched l;
  l.err = coach::testing::FreshTestDir("in-place-launch") + "/stderr";
  l.started = absl::Now();
  l.pid = coach::launcher::testing::Spawn(kLauncher, args, std::move(env), l.err);
  return l;
}

struct Ended {
  int code = -1;
  std::string err;
  absl::Duration took;
};

Ended Wait(const Launched& l) {
  Ended e;
  int status = 0;
  waitpid(l.pid, &status, 0);
  e.took = absl::Now() - l.started;
  e.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(l.err);
  std::stringstream ss;
  ss << in.rdbuf();
  e.err = ss.str();
  return e;
}

Ended Launch(const std::vector<std::string>& args, std::map<std::string, std::string> env) {
  return Wait(Start(args, std::move(env)));
}

std::vector<std::string> Lines(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Two workers (torch mode), each recording "local_rank COACH_ATTEMPT TORCHELASTIC_RESTART_COUNT"
// in `runs` when it starts, then doing what `script` says for its attempt.
std::vector<std::string> TwoWorkers(const std::string& runs, const std::string& script) {
  return {
      "--nproc-per-node",
      "2",
      "--grace-period",
      "5s",
      "--",
      "/bin/sh",
      "-c",
      "echo \"$LOCAL_RANK $COACH_ATTEMPT $TORCHELASTIC_RESTART_COUNT\" >> " + runs + "; " + script};
}

// The job's current attempt, neither start nor exit, unless `answers` has the state.
FakeOperator::Answer ByState(int current, std::map<std::string, ReportProgressResponse> answers) {
  return [current, answers](const std::string& state) {
    auto it = answers.find(state);
    return it != answers.end() ? it->second : Directive(current, false, false);
  };
}

TEST(CoachLaunchInPlaceTest, AFailedWorkerRestartsBothInThePod) {
  FakeOperator op(ByState(0, {{"0/FAILED/3", Directive(1, true, false)}}));
  const std::string runs = coach::testing::FreshTestDir("in-place-restart") + "/runs";
  std::map<std::string, std::string> env = op.Env();
  env["COACH_ATTEMPT"] = "0";
  env["TORCHELASTIC_RESTART_COUNT"] = "0";
  // Attempt 0: rank 1 fails, rank 0 would sleep on; attempt 1: both end well.
  Ended e = Launch(TwoWorkers(runs,
                              "if [ $COACH_ATTEMPT = 1 ]; then exit 0; fi; "
                              "if [ $LOCAL_RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep 30"),
                   env);
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(Lines(runs), (std::vector<std::string>{"0 0 0", "0 1 1", "1 0 0", "1 1 1"})) << e.err;
  EXPECT_EQ(op.States(), (std::vector<std::string>{"0/RUNNING", "0/FAILED/3", "1/RUNNING"}));
  EXPECT_TRUE(Has(e.err, "coach-launch: attempt 0 failed with code 3; waiting up to 1m")) << e.err;
  EXPECT_TRUE(Has(e.err, "coach-launch: starting attempt 1 (in place)\n")) << e.err;
  EXPECT_LT(e.took, absl::Seconds(20));
}

TEST(CoachLaunchInPlaceTest, ALaterAttemptWhileTheWorkersRunStopsThemThenStartsThem) {
  const std::string dir = coach::testing::FreshTestDir("in-place-stop");
  // Another pod's rank failed once both workers here are up (after the first report): the
  // operator moves the job on to attempt 2, which the next heartbeat brings, and starts it once
  // they are stopped.
  FakeOperator op([dir](const std::string& state) {
    const bool up =
        access((dir + "/up.0").c_str(), F_OK) == 0 && access((dir + "/up.1").c_str(), F_OK) == 0;
    if (state == "0/RUNNING") return Directive(up ? 2 : 0, false, false);
    if (state == "0/STOPPED") return Directive(2, true, false);
    return Directive(2, false, false);
  });
  Ended e = Launch(
      TwoWorkers(dir + "/runs", "if [ $COACH_ATTEMPT = 2 ]; then exit 0; fi; sleep 0.5; touch " +
                                    dir + "/up.$LOCAL_RANK; exec sleep 30"),
      op.Env());
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(Lines(dir + "/runs"), (std::vector<std::string>{"0 0 0", "0 2 2", "1 0 0", "1 2 2"}))
      << e.err;
  EXPECT_EQ(op.States(), (std::vector<std::string>{"0/RUNNING", "0/STOPPED", "2/RUNNING"}));
  EXPECT_TRUE(Has(e.err,
                  "coach-launch: the operator restarts the job in place as attempt 2; stopping 2 "
                  "worker(s)"))
      << e.err;
  EXPECT_TRUE(Has(e.err, "coach-launch: starting attempt 2 (in place)\n")) << e.err;
  // The 2 s heartbeat brought the word, not the 30 s one, nor the workers' end.
  EXPECT_GE(e.took, absl::Milliseconds(1500));
  EXPECT_LT(e.took, absl::Seconds(15));
}

TEST(CoachLaunchInPlaceTest, ExitEndsWithTheFailedWorkersCode) {
  FakeOperator op(ByState(0, {{"0/FAILED/3", Directive(0, false, true)}}));
  const std::string runs = coach::testing::FreshTestDir("in-place-exit") + "/runs";
  Ended e =
      Launch(TwoWorkers(runs, "if [ $LOCAL_RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep 30"),
             op.Env());
  EXPECT_EQ(e.code, 3) << e.err;
  EXPECT_EQ(Lines(runs), (std::vector<std::string>{"0 0 0", "1 0 0"}));
  EXPECT_EQ(op.States(), (std::vector<std::string>{"0/RUNNING", "0/FAILED/3"}));
  EXPECT_TRUE(Has(e.err, "the operator ends the job here (exit); exiting with code 3")) << e.err;
}

TEST(CoachLaunchInPlaceTest, AnAnswerWithoutADirectiveEndsAtOnce) {
  FakeOperator op([](const std::string&) {
    ReportProgressResponse accepted;
    accepted.set_accepted(true);
    return accepted;
  });
  std::map<std::string, std::string> env = op.Env();
  env["COACH_IN_PLACE_WAIT"] = "30";
  const std::string runs = coach::testing::FreshTestDir("in-place-none") + "/runs";
  Ended e = Launch(TwoWorkers(runs, "if [ $LOCAL_RANK = 1 ]; then exit 3; fi; exec sleep 30"), env);
  EXPECT_EQ(e.code, 3) << e.err;
  EXPECT_LT(e.took, absl::Seconds(10));
  EXPECT_TRUE(Has(e.err, "does not restart this job in place; exiting with code 3")) << e.err;
}

TEST(CoachLaunchInPlaceTest, NoWordWithinTheWaitEndsWithTheCode) {
  FakeOperator op(ByState(0, {}));
  std::map<std::string, std::string> env = op.Env();
  env["COACH_IN_PLACE_WAIT"] = "1.5";
  Ended e = Launch({"--", "/bin/sh", "-c", "exit 4"}, env);
  EXPECT_EQ(e.code, 4) << e.err;
  EXPECT_GE(e.took, absl::Milliseconds(1500));
  EXPECT_LT(e.took, absl::Seconds(10));
  EXPECT_TRUE(Has(e.err, "no word from the operator within 1.5s (COACH_IN_PLACE_WAIT)")) << e.err;
}

TEST(CoachLaunchInPlaceTest, SigtermWhileWaitingEndsAtOnce) {
  FakeOperator op(ByState(0, {}));
  Launched l = Start({"--", "/bin/sh", "-c", "exit 4"}, op.Env());
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  // Waiting: the failure is reported (the state it replaced quickly may not have been).
  auto failed = [&op] {
    const std::vector<std::string> states = op.States();
    return !states.empty() && states.back() == "0/FAILED/4";
  };
  while (absl::Now() < give_up && !failed()) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_TRUE(failed());
  const absl::Time signalled = absl::Now();
  kill(l.pid, SIGTERM);
  Ended e = Wait(l);
  EXPECT_EQ(e.code, 128 + SIGTERM) << e.err;
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(5));
  EXPECT_TRUE(Has(e.err, "while waiting for the operator; exiting with code 143")) << e.err;
}

TEST(CoachLaunchInPlaceTest, BadSettingsAreNamedAndInPlaceWithoutReportsIsOff) {
  FakeOperator op(ByState(0, {}));
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"COACH_RESTART_MODE", "Inplace"},
                                                        {"COACH_ATTEMPT", "-1"},
                                                        {"COACH_IN_PLACE_WAIT", "0"}}) {
    std::map<std::string, std::string> env = op.Env();
    env[name] = value;
    Ended e = Launch({"--", "/bin/true"}, env);
    EXPECT_EQ(e.code, 2) << name;
    EXPECT_TRUE(Has(e.err, "coach-launch: " + name + ": ")) << e.err;
  }
  // No reports, no word to wait for: as without InPlace.
  Ended e = Launch({"--", "/bin/sh", "-c", "exit 4"},
                   {{"COACH_RESTART_MODE", "InPlace"}, {"COACH_IN_PLACE_WAIT", "30"}});
  EXPECT_EQ(e.code, 4) << e.err;
  EXPECT_LT(e.took, absl::Seconds(10));
  EXPECT_TRUE(Has(e.err, "COACH_RESTART_MODE=InPlace, but progress is not reported")) << e.err;
  EXPECT_FALSE(Has(e.err, "waiting up to")) << e.err;
}

}  // namespace
