// The coach-launch binary passing the operator's checkpoint request on to its workers and their
// answer back, against launcher/testing/fake_operator.h served over gRPC: the request file, the
// SIGUSR1 to workers that opted in only, the answer in the next report. The workers are small
// shell programs that keep the contract as docs/recovery.md words it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/test_dir.h"
#include "launcher/testing/fake_operator.h"
#include "launcher/testing/spawn.h"

namespace {

using coach::api::v1::CheckpointReport;
using coach::launcher::testing::CheckpointRequestOf;
using coach::launcher::testing::FakeOperator;

constexpr char kLauncher[] = "launcher/coach-launch";

struct Ended {
  int code = -1;
  std::string err;
  absl::Duration took;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Ended Launch(const std::vector<std::string>& args, std::map<std::string, std::string> env) {
  const std::string err = coach::testing::FreshTestDir("checkpoint-launch") + "/stderr";
  const absl::Time started = absl::Now();
  const pid_t pid = coach::launcher::testing::Spawn(kLauncher, args, std::move(env), err);
  int status = 0;
  waitpid(pid, &status, 0);
  Ended e;
  e.took = absl::Now() - started;
  e.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  e.err = Slurp(err);
  return e;
}

// The names in `dir`, sorted.
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str()); d != nullptr) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CoachLaunchCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = coach::testing::FreshTestDir("checkpoint");
    std::ofstream(dir_ + "/token") << "pod-token\n";
    address_ = op_.Serve();
  }

  std::map<std::string, std::string> Env() const {
    return {{"COACH_PROGRESS_ADDRESS", address_},
            {"COACH_PROGRESS_TOKEN_FILE", dir_ + "/token"},
            {"COACH_POD_NAMESPACE", "team-a"},
            {"COACH_POD_NAME", "ddp-worker-0"},
            {"TMPDIR", dir_}};
  }

  // `nproc` workers (torch mode) running `script` under /bin/sh.
  static std::vector<std::string> Workers(int nproc, const std::string& script) {
    return {"--nproc-per-node",
            std::to_string(nproc),
            "--grace-period",
            "5s",
            "--",
            "/bin/sh",
            "-c",
            script};
  }

  FakeOperator op_;
  std::string dir_;
  std::string address_;
};

// A worker that keeps the contract: SIGUSR1 handled (trap) before it opts in with its own pid;
// on the signal it answers the id of its request file at step 42 (through a temporary file), and
// ends. It prints a metric line now and then, as training does; 20 s without a signal: exit 3.
std::string OptedIn(const std::string& record) {
  return "f=$COACH_CHECKPOINT_REQUEST_FILE; got=; trap 'got=1' USR1; "
         "echo $$ > \"$f.armed.tmp\"; mv \"$f.armed.tmp\" \"$f.armed\"; i=0; "
         "while [ $i -lt 400 ]; do i=$((i+1)); echo \"coach-metric name=loss value=1 step=$i\"; "
         "if [ -n \"$got\" ]; then "
         "id=$(sed 's/.*\"id\":\\([0-9]*\\).*/\\1/' \"$f\"); "
         "echo \"{\\\"id\\\":$id,\\\"step\\\":42}\" > \"$f.done.tmp\"; mv \"$f.done.tmp\" "
         "\"$f.done\"; "
         "echo \"$LOCAL_RANK signalled $id\" >> " +
         record + "; exit 0; fi; sleep 0.05; done; exit 3";
}

TEST_F(CoachLaunchCheckpointTest, WorkersThatOptedInAreSignalledAndThePodsAnswerIsReported) {
  op_.SetCheckpoint(CheckpointRequestOf(1700000000123, absl::Now() + absl::Seconds(60)));
  const std::string record = dir_ + "/record";
  Ended e = Launch(Workers(2, OptedIn(record)), Env());
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_LT(e.took, absl::Seconds(15)) << e.err;
  // Both workers learnt of it by the signal (not by chance), each in its own file.
  const std::string got = Slurp(record);
  EXPECT_TRUE(Has(got, "0 signalled 1700000000123")) << got;
  EXPECT_TRUE(Has(got, "1 signalled 1700000000123")) << got;
  EXPECT_TRUE(Has(e.err, "coach-launch: checkpoint request 1700000000123 (deadline in ")) << e.err;
  EXPECT_TRUE(Has(e.err,
                  "coach-launch: checkpoint request 1700000000123: SIGUSR1 to rank 0 "
                  "(local 0, pid "))
      << e.err;
  EXPECT_TRUE(Has(e.err, "SIGUSR1 to rank 1 (local 1, pid ")) << e.err;
  EXPECT_TRUE(Has(e.err, "checkpoint request 1700000000123: saved at step 42 by 2 worker(s)"))
      << e.err;
  const std::vector<CheckpointReport> reports = op_.CheckpointReports();
  ASSERT_EQ(reports.size(), 1u) << e.err;
  EXPECT_EQ(reports[0].request_id(), 1700000000123);
  EXPECT_TRUE(reports[0].saved());
  EXPECT_EQ(reports[0].step(), 42);
  // The launcher's directory went with it.
  EXPECT_EQ(Entries(dir_), (std::vector<std::string>{"record", "token"}));
}

TEST_F(CoachLaunchCheckpointTest, AWorkerThatNeverOptedInIsNotSignalledNorKilled) {
  op_.SetCheckpoint(CheckpointRequestOf(7, absl::Now() + absl::Milliseconds(1500)));
  const std::string record = dir_ + "/record";
  // It trains for about 3 s, prints its request file at the end, and exits 0.
  Ended e = Launch(Workers(1,
                           "i=0; while [ $i -lt 30 ]; do i=$((i+1)); "
                           "echo \"coach-metric name=loss value=1 step=$i\"; sleep 0.1; done; "
                           "cat \"$COACH_CHECKPOINT_REQUEST_FILE\" > " +
                               record),
                   Env());
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(Has(Slurp(record), "{\"id\":7,\"deadline_unix_ms\":")) << Slurp(record);
  EXPECT_FALSE(Has(e.err, "SIGUSR1 to rank")) << e.err;
  const std::vector<CheckpointReport> reports = op_.CheckpointReports();
  ASSERT_EQ(reports.size(), 1u) << e.err;
  EXPECT_EQ(reports[0].request_id(), 7);
  EXPECT_FALSE(reports[0].saved());
  EXPECT_EQ(reports[0].message(), "no answer by the deadline from local rank(s) 0");
}

TEST_F(CoachLaunchCheckpointTest, AnArmedFileNamingAnotherProcessSignalsNobody) {
  op_.SetCheckpoint(CheckpointRequestOf(8, absl::Now() + absl::Seconds(2)));
  // The worker names its parent, the launcher itself: SIGUSR1 would end it.
  Ended e = Launch(Workers(1,
                           "echo $PPID > \"$COACH_CHECKPOINT_REQUEST_FILE.armed\"; "
                           "i=0; while [ $i -lt 25 ]; do i=$((i+1)); "
                           "echo \"coach-metric name=loss value=1 step=$i\"; sleep 0.1; done"),
                   Env());
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_TRUE(Has(e.err, "coach-launch: checkpoint request 8: local rank 0 does not run as pid "))
      << e.err;
  EXPECT_FALSE(Has(e.err, "SIGUSR1 to rank")) << e.err;
}

TEST_F(CoachLaunchCheckpointTest, WithSignalsOffAWorkerThatLooksAtItsFileAnswers) {
  op_.SetCheckpoint(CheckpointRequestOf(9, absl::Now() + absl::Seconds(60)));
  std::map<std::string, std::string> env = Env();
  env["COACH_CHECKPOINT_SIGNAL"] = "none";
  // Opted in, yet never signalled: it waits for the file itself.
  Ended e = Launch(Workers(1,
                           "f=$COACH_CHECKPOINT_REQUEST_FILE; echo $$ > \"$f.armed\"; "
                           "echo 'coach-metric name=loss value=1 step=1'; "
                           "while [ ! -f \"$f\" ]; do sleep 0.05; done; "
                           "echo '{\"id\":9,\"error\":\"nothing to save\"}' > \"$f.done.tmp\"; "
                           "mv \"$f.done.tmp\" \"$f.done\"; sleep 0.5"),
                   env);
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_FALSE(Has(e.err, "SIGUSR1")) << e.err;
  const std::vector<CheckpointReport> reports = op_.CheckpointReports();
  ASSERT_EQ(reports.size(), 1u) << e.err;
  EXPECT_FALSE(reports[0].saved());
  EXPECT_EQ(reports[0].message(), "local rank 0: nothing to save");

  env["COACH_CHECKPOINT_SIGNAL"] = "SIGUSR2";
  e = Launch(Workers(1, "true"), env);
  EXPECT_EQ(e.code, 2) << e.err;
  EXPECT_TRUE(Has(e.err, "coach-launch: COACH_CHECKPOINT_SIGNAL: ")) << e.err;
}

TEST_F(CoachLaunchCheckpointTest, WithoutReportsOrARequestNothingChanges) {
  const std::string record = dir_ + "/record";
  const std::string script = "echo \"${COACH_CHECKPOINT_REQUEST_FILE-unset}\" >> " + record +
                             "; echo 'coach-metric name=loss value=1 step=1'; sleep 0.3";
  // No progress reports: no channel, the environment as before.
  std::map<std::string, std::string> no_reports = {{"TMPDIR", dir_}};
  Ended e = Launch(Workers(1, script), no_reports);
  EXPECT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(Slurp(record), "unset\n");
  // Reports but no request: the variable names a file nobody wrote; nothing is reported.
  e = Launch(Workers(1, script + "; test ! -e \"$COACH_CHECKPOINT_REQUEST_FILE\""), Env());
  EXPECT_EQ(e.code, 0) << e.err;
  const std::string second = Slurp(record).substr(6);
  EXPECT_EQ(second.rfind(dir_ + "/coach-launch-checkpoint-", 0), 0u) << second;
  EXPECT_TRUE(Has(second, "/checkpoint-request-0.json\n")) << second;
  EXPECT_TRUE(op_.CheckpointReports().empty());
  EXPECT_FALSE(Has(e.err, "checkpoint request")) << e.err;
  // The launcher's directory went with it.
  EXPECT_NE(access(second.substr(0, second.rfind('/')).c_str(), F_OK), 0) << second;
}

// A worker that answers every request at step 42 and goes on until SIGTERM, which it records.
std::string AnswersUntilTerm(const std::string& record) {
  return "f=$COACH_CHECKPOINT_REQUEST_FILE; got=; trap 'got=1' USR1; "
         "trap 'echo term >> " +
         record +
         "; exit 143' TERM; "
         "echo $$ > \"$f.armed.tmp\"; mv \"$f.armed.tmp\" \"$f.armed\"; i=0; "
         "while [ $i -lt 400 ]; do i=$((i+1)); echo \"coach-metric name=loss value=1 step=$i\"; "
         "if [ -n \"$got\" ]; then got=; "
         "id=$(sed 's/.*\"id\":\\([0-9]*\\).*/\\1/' \"$f\"); "
         "echo \"{\\\"id\\\":$id,\\\"step\\\":42}\" > \"$f.done.tmp\"; mv \"$f.done.tmp\" "
         "\"$f.done\"; echo \"signalled $id\" >> " +
         record + "; fi; sleep 0.05; done; exit 3";
}

class NoticeHoldLaunch : public CoachLaunchCheckpointTest {
 protected:
  // Starts the launcher, waits for its first report with progress, sends it SIGTERM; returns
  // its pid and stderr path.
  pid_t StartAndTerm(std::map<std::string, std::string> env, const std::string& record,
                     std::string* err) {
    *err = coach::testing::FreshTestDir("notice-hold") + "/stderr";
    const size_t before = op_.Requests().size();  // an earlier launcher's
    const pid_t pid =
        coach::launcher::testing::Spawn(kLauncher, Workers(1, AnswersUntilTerm(record)), env, *err);
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    auto progressed = [this, before] {
      const std::vector<coach::api::v1::ReportProgressRequest> requests = op_.Requests();
      for (size_t i = before; i < requests.size(); ++i) {
        if (requests[i].step() >= 1) return true;
      }
      return false;
    };
    while (!progressed() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(20));
    EXPECT_TRUE(progressed()) << Slurp(*err);
    at_term_ = op_.Requests().size();
    kill(pid, SIGTERM);
    termed_ = absl::Now();
    return pid;
  }
  Ended Wait(pid_t pid, const std::string& err) {
    int status = 0;
    waitpid(pid, &status, 0);
    Ended e;
    e.took = absl::Now() - termed_;
    e.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    e.err = Slurp(err);
    return e;
  }
  absl::Time termed_;
  size_t at_term_ = 0;  // reports before the SIGTERM
};

// An eviction: the pod's SIGTERM comes as the operator learns of it. The launcher holds it back
// from the workers until the operator's request (which comes with a later report) is answered,
// then passes it on.
TEST_F(NoticeHoldLaunch, ASigtermWaitsForTheRequestAnEvictionBringsThenGoesOn) {
  std::map<std::string, std::string> env = Env();
  env["COACH_NOTICE_WAIT"] = "5";
  const std::string record = dir_ + "/record";
  std::string err;
  const pid_t pid = StartAndTerm(env, record, &err);
  // The operator takes a moment to see the eviction; the worker trains on meanwhile.
  absl::SleepFor(absl::Seconds(1));
  EXPECT_EQ(Slurp(record), "");
  const size_t reports_before = op_.Requests().size();
  op_.SetCheckpoint(CheckpointRequestOf(1700000000777, absl::Now() + absl::Seconds(30)));
  Ended e = Wait(pid, err);
  EXPECT_EQ(e.code, 128 + SIGTERM) << e.err;
  // Saved first, then stopped.
  EXPECT_EQ(Slurp(record), "signalled 1700000000777\nterm\n") << e.err;
  EXPECT_TRUE(Has(e.err,
                  "coach-launch: got Terminated; holding it up to 5s for the operator's "
                  "checkpoint request"))
      << e.err;
  const std::vector<CheckpointReport> reports = op_.CheckpointReports();
  ASSERT_EQ(reports.size(), 1u) << e.err;
  EXPECT_EQ(reports[0].request_id(), 1700000000777);
  EXPECT_TRUE(reports[0].saved());
  EXPECT_EQ(reports[0].step(), 42);
  // While holding, reports went every quarter second (the request's way in): several within the
  // second before it.
  EXPECT_GE(reports_before - at_term_, 3u);
  EXPECT_LT(e.took, absl::Seconds(10)) << e.err;
}

// A pod the operator deletes itself (a restart): no request is coming, the signal goes on at once.
TEST_F(NoticeHoldLaunch, ASigtermForAPodTheOperatorStopsGoesOnAtOnce) {
  op_.SetAnswer([](const coach::api::v1::ReportProgressRequest&) {
    coach::api::v1::ReportProgressResponse r;
    r.set_accepted(true);
    r.set_stopping(true);
    return r;
  });
  std::map<std::string, std::string> env = Env();
  env["COACH_NOTICE_WAIT"] = "5";
  const std::string record = dir_ + "/record";
  std::string err;
  Ended e = Wait(StartAndTerm(env, record, &err), err);
  EXPECT_EQ(e.code, 128 + SIGTERM) << e.err;
  EXPECT_EQ(Slurp(record), "term\n");
  EXPECT_FALSE(Has(e.err, "holding it")) << e.err;
  EXPECT_LT(e.took, absl::Seconds(4)) << e.err;
}

// No request within the wait (a user's delete, the job deleted): the signal goes on after it.
// Without COACH_NOTICE_WAIT nothing is held; a bad value is refused, naming the variable.
TEST_F(NoticeHoldLaunch, WithoutARequestTheSigtermGoesOnAfterTheWait) {
  std::map<std::string, std::string> env = Env();
  env["COACH_NOTICE_WAIT"] = "1";
  const std::string record = dir_ + "/record";
  std::string err;
  Ended e = Wait(StartAndTerm(env, record, &err), err);
  EXPECT_EQ(e.code, 128 + SIGTERM) << e.err;
  EXPECT_EQ(Slurp(record), "term\n");
  EXPECT_TRUE(Has(e.err, "holding it up to 1s")) << e.err;
  EXPECT_GE(e.took, absl::Seconds(1)) << e.err;
  EXPECT_LT(e.took, absl::Seconds(6)) << e.err;

  env.erase("COACH_NOTICE_WAIT");
  e = Wait(StartAndTerm(env, dir_ + "/record2", &err), err);
  EXPECT_EQ(e.code, 128 + SIGTERM) << e.err;
  EXPECT_FALSE(Has(e.err, "holding it")) << e.err;
  EXPECT_LT(e.took, absl::Seconds(4)) << e.err;

  env["COACH_NOTICE_WAIT"] = "61";
  Ended bad = Launch(Workers(1, "true"), env);
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_TRUE(Has(bad.err, "COACH_NOTICE_WAIT=61: want whole seconds in 0..60")) << bad.err;
}

}  // namespace
