// End to end on the local backend: a job's life from submission to Succeeded or Failed,
// with restarts by policy (ExitCode, OnFailure + backoffLimit); a replica's log stays within
// its bound under a fast writer, and what a replica starts ends with it.

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

class LifecycleTest : public OperatorTest {
 protected:
  void SetUp() override { StartOperator(); }

  // Lines of a file the replicas append to.
  std::vector<std::string> Lines(const std::string& path) {
    return absl::StrSplit(ReadFileOrEmpty(path), '\n', absl::SkipEmpty());
  }

  // The pids a replica's script appended to `path`, one a line.
  std::vector<pid_t> Pids(const std::string& path) {
    std::vector<pid_t> out;
    for (const std::string& line : Lines(path)) {
      pid_t pid;
      if (absl::SimpleAtoi(line, &pid)) out.push_back(pid);
    }
    return out;
  }

  static bool Alive(pid_t pid) {
    // A zombie has ended; /proc/<pid>/stat's third field says so.
    const std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
    const size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
  }

  // A script that starts `n` sleepers in sessions of their own (setsid) and one behind a
  // double fork, out of the replica's process group, each appending its pid to `pids`,
  // waits until all of them wrote it, then runs `then`. (A command's `$$$$` is the shell's
  // `$$`: `$$` is the kubelet's escape for `$`.) `pids` exists before the first of them
  // starts: on a missing file the count is empty, `[` fails and the wait ends at once.
  static std::string EscapeScript(const std::string& pids, int n, const std::string& then) {
    return absl::StrCat(": > ", pids, "; i=0; while [ $i -lt ", n,
                        " ]; do setsid sh -c 'echo $$$$ >> ", pids,
                        "; exec sleep 1000' & i=$((i+1)); done; ", "( sh -c 'echo $$$$ >> ", pids,
                        "; exec sleep 1000' & ) ; ", "while [ $(wc -l < ", pids, ") -lt ", n + 1,
                        " ]; do sleep 0.01; done; ", then);
  }
};

TEST_F(LifecycleTest, ShellJobSucceeds) {
  // The Master ends the job (PyTorchJob: the job Succeeds when the Master does), so it
  // waits until the shims recorded both Workers' exits (replicas/<ns>/<job>/<pod>.exit,
  // local_backend.h): replicaStatuses then count every replica, not a Worker that was
  // still starting (upstream counts only Running/Succeeded/Failed pods).
  const std::string replicas_dir = op_->state_dir() + "/replicas/default/hello";
  const std::string script = absl::StrCat(
      "echo \"ok from $HOSTNAME rank $RANK\"; [ \"$RANK\" != 0 ] && exit 0; n=0; ", "while [ ! -e ",
      replicas_dir, "/hello-worker-0.exit ] || [ ! -e ", replicas_dir,
      "/hello-worker-1.exit ]; do [ $n -gt 1200 ] && exit 3; sleep 0.1; n=$((n+1)); done");
  const TrainingJob job =
      BuildOrDie(ShellJob("hello", script).Masters(1).Workers(2).RestartPolicy("Never"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());

  absl::StatusOr<TrainingJob> done = op_->WaitFinished("hello", absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();
  EXPECT_FALSE(sdk::IsJobFailed(*done));
  EXPECT_TRUE(sdk::HasTrueCondition(*done, "Created"));
  EXPECT_EQ(sdk::JobState(*done), "Succeeded");
  EXPECT_FALSE(sdk::ConditionMessage(*done, "Succeeded").empty());

  const auto& rs = done->status().replica_statuses();
  ASSERT_EQ(rs.count("Master"), 1u) << done->status().ShortDebugString();
  ASSERT_EQ(rs.count("Worker"), 1u) << done->status().ShortDebugString();
  EXPECT_EQ(rs.at("Master").succeeded(), 1);
  EXPECT_EQ(rs.at("Master").active(), 0);
  EXPECT_EQ(rs.at("Master").failed(), 0);
  EXPECT_EQ(rs.at("Worker").succeeded(), 2);
  EXPECT_EQ(rs.at("Worker").active(), 0);
  EXPECT_EQ(rs.at("Worker").failed(), 0);
  ASSERT_TRUE(done->status().has_completion_time());
  ASSERT_TRUE(done->status().has_start_time());
  EXPECT_GE(done->status().completion_time().seconds(), done->status().start_time().seconds());

  absl::StatusOr<api::v1::DescribeJobResponse> described = op_->client().DescribeJob(kNs, "hello");
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->replicas_size(), 3) << described->ShortDebugString();
  for (const api::v1::ReplicaState& r : described->replicas()) {
    EXPECT_EQ(r.phase(), "Succeeded") << r.ShortDebugString();
    EXPECT_TRUE(r.has_exit_code() && r.exit_code() == 0) << r.ShortDebugString();
    EXPECT_EQ(r.restarts(), 0) << r.ShortDebugString();
  }
  EXPECT_GT(described->events_size(), 0);

  // Logs through the SDK, each replica its own, with the environment the reconciler wired.
  const std::vector<std::pair<std::string, std::string>> replicas = {
      {"master-0", "0"}, {"worker-0", "1"}, {"worker-1", "2"}};
  for (const auto& [replica, rank] : replicas) {
    absl::StatusOr<std::string> log = op_->Logs("hello", replica);
    ASSERT_TRUE(log.ok()) << replica << ": " << log.status();
    EXPECT_TRUE(absl::StrContains(*log, absl::StrCat("ok from hello-", replica, " rank ", rank)))
        << replica << ": " << *log;
  }
  EXPECT_TRUE(absl::IsNotFound(op_->Logs("hello", "worker-7").status()));

  // The same through the CLI.
  CliResult logs = op_->Cli({"logs", "hello", "--replica", "worker-1"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_TRUE(absl::StrContains(logs.out, "ok from hello-worker-1 rank 2")) << logs.out;
  CliResult all_logs = op_->Cli({"logs", "hello"});
  EXPECT_EQ(all_logs.exit_code, 0) << all_logs.err;
  for (const auto& [replica, rank] : replicas) {
    EXPECT_TRUE(absl::StrContains(all_logs.out, "ok from hello-" + replica)) << all_logs.out;
  }

  CliResult list = op_->Cli({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> rows = absl::StrSplit(list.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(rows.size(), 2u) << list.out;
  for (const char* column : {"NAME", "KIND", "STATE", "REPLICAS", "AGE"}) {
    EXPECT_TRUE(absl::StrContains(rows[0], column)) << list.out;
  }
  EXPECT_TRUE(absl::StartsWith(rows[1], "hello ")) << list.out;
  EXPECT_TRUE(absl::StrContains(rows[1], "PyTorchJob")) << list.out;
  EXPECT_TRUE(absl::StrContains(rows[1], "Succeeded")) << list.out;

  CliResult describe = op_->Cli({"describe", "hello"});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  for (const char* want : {"Succeeded", "master-0", "worker-0", "worker-1"}) {
    EXPECT_TRUE(absl::StrContains(describe.out, want)) << want << " in:\n" << describe.out;
  }

  CliResult wait_cli = op_->Cli({"wait", "hello", "--for", "Succeeded", "--timeout", "60s"});
  EXPECT_EQ(wait_cli.exit_code, 0) << wait_cli.out << wait_cli.err;

  CliResult get = op_->Cli({"get", "hello", "-o", "json"});
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_TRUE(absl::StrContains(get.out, "\"completionTime\"")) << get.out;

  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

// A 1 KB job whose env expands to a gigabyte ($(V6) -> 10 x $(V5) -> ... over a 100-byte V0)
// fails with a message naming the variable; the operator stays up and runs the next job.
TEST_F(LifecycleTest, EnvExpansionBombFailsTheJobNotTheOperator) {
  sdk::JobBuilder bomb = ShellJob("bomb", "echo never").Masters(1).RestartPolicy("Never");
  bomb.Env("V0", std::string(100, 'x'));
  for (int i = 1; i < 8; ++i) {
    std::string value;
    for (int j = 0; j < 10; ++j) absl::StrAppend(&value, "$(V", i - 1, ")");
    bomb.Env(absl::StrCat("V", i), value);
  }
  ASSERT_TRUE(op_->client().CreateJob(BuildOrDie(bomb), kNs).ok());
  absl::StatusOr<TrainingJob> done =
      op_->WaitJob("bomb", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(sdk::IsJobFailed(*done)) << done->status().ShortDebugString();
  bool named = false;
  for (const api::v1::JobCondition& c : done->status().conditions()) {
    if (c.type() == "Failed") named = absl::StrContains(c.message(), "env V4");
  }
  EXPECT_TRUE(named) << done->status().ShortDebugString();
  ASSERT_TRUE(op_->client().CreateJob(BuildOrDie(ShellJob("after", "true").Masters(1)), kNs).ok());
  absl::StatusOr<TrainingJob> after =
      op_->WaitJob("after", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*after));
}

// 80 replicas: more ports than 64 candidates, so the allocator must try per port.
TEST_F(LifecycleTest, AJobOfEightyReplicasRuns) {
  ASSERT_TRUE(op_->client()
                  .CreateJob(BuildOrDie(ShellJob("wide", "echo rank $RANK of $WORLD_SIZE")
                                            .Masters(1)
                                            .Workers(79)
                                            .RestartPolicy("Never")),
                             kNs)
                  .ok());
  absl::StatusOr<TrainingJob> done = op_->WaitJob(
      "wide", [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();
  EXPECT_TRUE(absl::StrContains(op_->Logs("wide", "master-0").value_or(""), "rank 0 of 80"));
}

TEST_F(LifecycleTest, ExitOneWithNeverFails) {
  const TrainingJob job = BuildOrDie(
      ShellJob("broken", "echo failing; exit 1").Masters(1).Workers(1).RestartPolicy("Never"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());

  absl::StatusOr<TrainingJob> done =
      op_->WaitJob("broken", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_TRUE(sdk::IsJobFailed(*done)) << done->status().ShortDebugString();
  EXPECT_FALSE(sdk::IsJobSucceeded(*done));
  bool found = false;
  for (const api::v1::JobCondition& c : done->status().conditions()) {
    if (c.type() != "Failed") continue;
    found = true;
    EXPECT_EQ(c.status(), "True");
    EXPECT_FALSE(c.reason().empty()) << c.ShortDebugString();
    EXPECT_FALSE(c.message().empty()) << c.ShortDebugString();
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(done->status().has_completion_time());
  int failed = 0;
  for (const auto& [type, rs] : done->status().replica_statuses()) failed += rs.failed();
  EXPECT_GE(failed, 1) << done->status().ShortDebugString();

  absl::StatusOr<api::v1::DescribeJobResponse> described = op_->client().DescribeJob(kNs, "broken");
  ASSERT_TRUE(described.ok()) << described.status();
  bool exit_one = false;
  for (const api::v1::ReplicaState& r : described->replicas()) {
    if (r.phase() == "Failed" && r.has_exit_code() && r.exit_code() == 1) exit_one = true;
  }
  EXPECT_TRUE(exit_one) << described->ShortDebugString();

  CliResult wait_cli = op_->Cli({"wait", "broken", "--for", "Succeeded", "--timeout", "60s"});
  EXPECT_EQ(wait_cli.exit_code, 4) << wait_cli.out << wait_cli.err;
  CliResult wait_failed = op_->Cli({"wait", "broken", "--for", "Failed", "--timeout", "60s"});
  EXPECT_EQ(wait_failed.exit_code, 0) << wait_failed.out << wait_failed.err;

  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

TEST_F(LifecycleTest, ExitCodeRetryableThenSucceeds) {
  // The first run records itself and exits 137 (retryable under ExitCode), the second
  // exits 0. One Master only: the Master decides a PyTorchJob, so a Worker still being
  // restarted when the Master ends would be left Pending.
  const std::string dir = op_->root() + "/work";
  const std::string script = absl::StrCat("echo run >> ", dir, "/runs-$HOSTNAME; if [ -e ", dir,
                                          "/marker-$HOSTNAME ]; then exit 0; fi; ", "touch ", dir,
                                          "/marker-$HOSTNAME; exit 137");
  const TrainingJob job =
      BuildOrDie(ShellJob("retry", script).Masters(1).RestartPolicy("ExitCode"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());

  absl::StatusOr<TrainingJob> done = op_->WaitJob(
      "retry", [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();

  absl::StatusOr<api::v1::DescribeJobResponse> described = op_->client().DescribeJob(kNs, "retry");
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->replicas_size(), 1) << described->ShortDebugString();
  for (const api::v1::ReplicaState& r : described->replicas()) {
    EXPECT_EQ(r.phase(), "Succeeded") << r.ShortDebugString();
    EXPECT_EQ(r.restarts(), 1) << r.ShortDebugString();
  }
  EXPECT_EQ(Lines(dir + "/runs-retry-master-0").size(), 2u);
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

TEST_F(LifecycleTest, ExitCodePermanentFails) {
  const std::string dir = op_->root() + "/work";
  const TrainingJob job =
      BuildOrDie(ShellJob("permanent", absl::StrCat("echo run >> ", dir, "/runs-$HOSTNAME; exit 1"))
                     .Masters(1)
                     .RestartPolicy("ExitCode"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());

  absl::StatusOr<TrainingJob> done =
      op_->WaitJob("permanent", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobFailed(*done)) << done->status().ShortDebugString();
  EXPECT_FALSE(sdk::ConditionMessage(*done, "Failed").empty());
  // Exit 1 is permanent under ExitCode: never restarted.
  EXPECT_EQ(Lines(dir + "/runs-permanent-master-0").size(), 1u);
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

TEST_F(LifecycleTest, BackoffLimitStopsRestarts) {
  const std::string runs = op_->root() + "/work/runs";
  const TrainingJob job =
      BuildOrDie(ShellJob("backoff", absl::StrCat("echo run >> ", runs, "; exit 1"))
                     .Masters(1)
                     .RestartPolicy("OnFailure")
                     .BackoffLimit(2));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());

  absl::StatusOr<TrainingJob> done = op_->WaitJob(
      "backoff", [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status() << "\nstarts: " << Lines(runs).size();
  ASSERT_TRUE(sdk::IsJobFailed(*done)) << done->status().ShortDebugString();
  EXPECT_TRUE(absl::StrContains(sdk::ConditionMessage(*done, "Failed"), "backoff limit"))
      << sdk::ConditionMessage(*done, "Failed");

  EXPECT_TRUE(op_->WaitNoProcesses().empty());
  // backoffLimit 2: the first start and two restarts (the pod of the third start carries
  // restart count 2, which fails the job), and nothing starts once the job has failed.
  const size_t starts = Lines(runs).size();
  EXPECT_EQ(starts, 3u);
  absl::SleepFor(absl::Seconds(2));  // not an assertion on timing: a window for a stray start
  EXPECT_EQ(Lines(runs).size(), starts);
}

// A replica that writes 230 MB as fast as it can: its log never takes more than the bound
// (64 MiB live, 64 MiB rotated) on disk, the newest lines are kept, its last line among them,
// and the job Succeeds.
TEST_F(LifecycleTest, FastWriterKeepsItsLastLineWithinTheLogBound) {
  constexpr int64_t kCap = 64 << 20;  // LocalBackendOptions::max_log_bytes
  const TrainingJob job =
      BuildOrDie(ShellJob("fast",
                          "yes 'a line of a replica writing as fast as it can' | "
                          "head -c 230000000; echo; echo fast-writer-final-line")
                     .Masters(1)
                     .RestartPolicy("Never"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());
  const std::string log = op_->state_dir() + "/replicas/default/fast/fast-master-0.log";
  const std::string exit_file = op_->state_dir() + "/replicas/default/fast/fast-master-0.exit";
  auto size = [](const std::string& path) -> int64_t {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
  };
  // The disk the log takes, while the replica writes (sampled until it exits).
  int64_t peak = 0;
  Eventually(
      [&] {
        if (size(exit_file) != 0) return true;
        peak = std::max(peak, size(log) + size(log + ".1"));
        return false;
      },
      kProcessTimeout, absl::Milliseconds(2));
  absl::StatusOr<TrainingJob> done =
      op_->WaitJob("fast", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();
  EXPECT_LE(peak, 2 * kCap);
  EXPECT_LE(size(log), kCap);
  EXPECT_LE(size(log + ".1"), kCap);
  EXPECT_GT(size(log + ".1"), kCap / 2) << "never rotated";

  absl::StatusOr<std::string> text = op_->Logs("fast", "master-0");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(absl::EndsWith(*text, "as fast as it can\n\nfast-writer-final-line\n"))
      << text->substr(text->size() > 200 ? text->size() - 200 : 0);
  CliResult tail = op_->Cli({"logs", "fast", "--tail", "1"});
  EXPECT_EQ(tail.exit_code, 0) << tail.err;
  EXPECT_TRUE(absl::StrContains(tail.out, "fast-writer-final-line")) << tail.out;
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

// Processes a replica started outside its process group (setsid, a double fork) end with
// it: by the time the job has Succeeded, none of them is left.
TEST_F(LifecycleTest, EscapedProcessesEndWithTheJob) {
  const std::string pids = op_->root() + "/work/escaped-pids";
  const TrainingJob job =
      BuildOrDie(ShellJob("escape", EscapeScript(pids, 20, "echo started; exit 0"))
                     .Masters(1)
                     .RestartPolicy("Never"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());
  absl::StatusOr<TrainingJob> done =
      op_->WaitJob("escape", [](const TrainingJob& j) { return sdk::IsJobFinished(j); });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();
  const std::vector<pid_t> escaped = Pids(pids);
  ASSERT_EQ(escaped.size(), 21u) << ReadFileOrEmpty(pids);
  for (pid_t pid : escaped) EXPECT_FALSE(Alive(pid)) << pid << " outlived its job";
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

// The same for a job deleted while it runs: once it is gone, so is every process it started.
TEST_F(LifecycleTest, EscapedProcessesEndWhenTheJobIsDeleted) {
  const std::string pids = op_->root() + "/work/escaped-pids";
  const TrainingJob job = BuildOrDie(
      ShellJob("escape-deleted", EscapeScript(pids, 20, "while true; do sleep 0.1; done"))
          .Masters(1)
          .RestartPolicy("Never"));
  ASSERT_TRUE(op_->client().CreateJob(job, kNs).ok());
  Eventually([&] { return Pids(pids).size() >= 21; }, absl::Seconds(60), absl::Milliseconds(20));
  const std::vector<pid_t> escaped = Pids(pids);
  ASSERT_EQ(escaped.size(), 21u) << ReadFileOrEmpty(pids);
  for (pid_t pid : escaped) EXPECT_TRUE(Alive(pid)) << pid;

  ASSERT_TRUE(op_->client().DeleteJob(kNs, "escape-deleted").ok());
  ASSERT_TRUE(op_->WaitJobGone("escape-deleted").ok());
  for (pid_t pid : escaped) EXPECT_FALSE(Alive(pid)) << pid << " outlived its deleted job";
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

}  // namespace
}  // namespace coach::e2e
