// Chaos on the local backend: coach-operator --backend=local killed with
// SIGKILL while real-process jobs run, restarted each time on the same --state-dir. Prints a table
// of counts; a wrong count fails. Sizes (the defaults take about 75 s here: 200 jobs,
// and twice its 10 kills, since 20 found a race that 10 missed on the default seed):
//   COACH_LOCAL_CHAOS_JOBS (default 200), COACH_LOCAL_CHAOS_KILLS (20), COACH_LOCAL_CHAOS_SEED
//   (13), COACH_LOCAL_CHAOS_TIMEOUT (seconds for every job to finish after the last kill; 300).
// Pass them with --test_env (e2e/local/README.md).
//
// What is counted:
// - every replica start: each replica appends "start <pod> <attempt> <pid>" to one O_APPEND log
//   before it does anything else, and holds an exclusive flock(1) on <locks>/<pod> for its whole
//   life (its children inherit the descriptor). A start that finds the lock taken is a second,
//   concurrent instance of the same replica: a duplicate, whatever the restart policy allows.
// - starts beyond the restart policy: a Never replica starts at most once, a "recover" one
//   (OnFailure, exits 1 on its first attempt) at most twice, a "backoff" one at most
//   backoffLimit + 1 times.
// - jobs: every job whose CreateJob returned OK (or AlreadyExists on a retry after an
//   Unavailable: the earlier attempt was stored) must be there after the run (else lost), finish
//   (else unfinished) in the state its spec implies (else wrong end state).
// - orphans: after every job is deleted and the operator stopped with SIGTERM, processes left
//   whose environment holds the fixture's HOME or CHAOS_MARK (OperatorFixture::Processes and a
//   scan of /proc for the marker).

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

int EnvInt(const char* name, int fallback) {
  int value = 0;
  const std::string text = EnvOrEmpty(name);
  if (text.empty()) return fallback;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    ADD_FAILURE() << name << ": not a non-negative integer: '" << text << "'";
    return fallback;
  }
  return value;
}

enum class Scenario { kSucceed, kFail, kRecover, kBackoff };

const char* ScenarioName(Scenario s) {
  switch (s) {
    case Scenario::kSucceed:
      return "succeed";
    case Scenario::kFail:
      return "fail";
    case Scenario::kRecover:
      return "recover";
    case Scenario::kBackoff:
      return "backoff";
  }
  return "?";
}

struct JobPlan {
  std::string name;
  Scenario scenario;
  int workers = 0;
  int backoff_limit = 0;
  bool want_succeeded = false;
  int max_starts_per_pod = 1;
  // Filled by the submitter.
  bool acknowledged = false;       // CreateJob returned OK
  bool acknowledged_late = false;  // AlreadyExists after an Unavailable attempt
  std::string create_error;        // anything else
};

// The replica's script: the start record and lock first, then the scenario. "$$$$" is the
// shell's "$$" (the pid) through Kubernetes' $(VAR) expansion, where "$$" means "$".
std::string ReplicaScript(const std::string& dir, const JobPlan& plan, std::mt19937* rng) {
  const std::string head =
      absl::StrCat("exec 9>>", dir, "/locks/$HOSTNAME; n=$(grep -c \"^start $HOSTNAME \" ", dir,
                   "/starts.log); if ! flock -n 9; then echo \"dup $HOSTNAME $n $$$$\" >> ", dir,
                   "/starts.log; fi; echo \"start $HOSTNAME $n $$$$\" >> ", dir, "/starts.log; ");
  const int tenths = std::uniform_int_distribution<int>(10, 40)(*rng);
  const std::string sleep = absl::StrCat("sleep ", tenths / 10, ".", tenths % 10, "; ");
  switch (plan.scenario) {
    case Scenario::kSucceed:
      return absl::StrCat(head, sleep, "exit 0");
    case Scenario::kFail:
      return absl::StrCat(head, sleep, "exit 2");
    case Scenario::kRecover:
      return absl::StrCat(head, "sleep 1; if [ $n -ge 1 ]; then ", sleep, "exit 0; fi; exit 1");
    case Scenario::kBackoff:
      return absl::StrCat(head, "sleep 0.5; exit 1");
  }
  return head;
}

std::vector<JobPlan> DrawJobs(int count, int seed) {
  std::mt19937 rng(seed);
  std::vector<JobPlan> jobs;
  for (int i = 0; i < count; ++i) {
    JobPlan plan;
    plan.name = absl::StrCat("chaos-", i);
    const int draw = std::uniform_int_distribution<int>(0, 99)(rng);
    plan.scenario = draw < 45   ? Scenario::kSucceed
                    : draw < 65 ? Scenario::kFail
                    : draw < 85 ? Scenario::kRecover
                                : Scenario::kBackoff;
    plan.workers = std::uniform_int_distribution<int>(0, 2)(rng);
    switch (plan.scenario) {
      case Scenario::kSucceed:
        plan.want_succeeded = true;
        break;
      case Scenario::kFail:
        break;
      case Scenario::kRecover:
        plan.want_succeeded = true;
        plan.max_starts_per_pod = 2;
        // Each replica fails once: room for all of them.
        plan.backoff_limit = 2 * (plan.workers + 1);
        break;
      case Scenario::kBackoff:
        plan.workers = 0;
        plan.backoff_limit = 2;
        plan.max_starts_per_pod = plan.backoff_limit + 1;
        break;
    }
    jobs.push_back(plan);
  }
  return jobs;
}

TrainingJob BuildJob(const JobPlan& plan, const std::string& dir, std::mt19937* rng) {
  const std::string script = ReplicaScript(dir, plan, rng);
  const bool restarts = plan.scenario == Scenario::kRecover || plan.scenario == Scenario::kBackoff;
  sdk::JobBuilder builder = ShellJob(plan.name, script)
                                .Masters(1)
                                .RestartPolicy(restarts ? "OnFailure" : "Never")
                                .Env("CHAOS_MARK", dir);
  if (plan.workers > 0) builder.Workers(plan.workers);
  if (restarts) builder.BackoffLimit(plan.backoff_limit);
  return BuildOrDie(builder);
}

// Pids of processes whose environment holds CHAOS_MARK=<dir>.
std::vector<std::string> MarkedProcesses(const std::string& dir) {
  std::vector<std::string> found;
  const std::string needle = "CHAOS_MARK=" + dir;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    const std::string environ = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/environ"));
    for (absl::string_view var : absl::StrSplit(environ, '\0')) {
      if (var == needle) {
        found.push_back(
            absl::StrCat(pid, " ", ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/comm"))));
        break;
      }
    }
  }
  closedir(proc);
  return found;
}

TEST(LocalChaosTest, OperatorSigkillsWhileJobsRun) {
  const int job_count = EnvInt("COACH_LOCAL_CHAOS_JOBS", 200);
  const int kills = EnvInt("COACH_LOCAL_CHAOS_KILLS", 20);
  const int seed = EnvInt("COACH_LOCAL_CHAOS_SEED", 13);
  const int finish_timeout = EnvInt("COACH_LOCAL_CHAOS_TIMEOUT", 300);
  const absl::Time began = absl::Now();

  OperatorFixture op("local-chaos");
  ASSERT_TRUE(op.Start().ok()) << op.OperatorLog();
  const std::string dir = op.root() + "/chaos";
  std::error_code made;
  std::filesystem::create_directories(dir + "/locks", made);
  ASSERT_FALSE(made) << dir << "/locks: " << made.message();
  WriteFileOrDie(dir + "/starts.log", "");

  std::vector<JobPlan> jobs = DrawJobs(job_count, seed);
  std::vector<TrainingJob> built;
  std::mt19937 script_rng(seed + 1);
  for (const JobPlan& plan : jobs) built.push_back(BuildJob(plan, dir, &script_rng));

  // The fixture is not thread-safe: kills, restarts and client creation under `mu`. The
  // submitter makes a new client after each restart (the ports change).
  std::mutex mu;
  int generation = 0;  // guarded by mu; bumped on every restart
  bool up = true;      // guarded by mu
  std::atomic<bool> submitted{false};
  std::atomic<int> create_attempts{0};
  std::thread submitter([&] {
    std::unique_ptr<sdk::TrainingClient> client;
    int client_generation = -1;
    std::mt19937 pace(seed + 2);
    for (size_t i = 0; i < jobs.size(); ++i) {
      bool unavailable_before = false;
      // Until the operator answers: it may be down, or restarting on new ports.
      Eventually(
          [&] {
            {
              std::lock_guard<std::mutex> lock(mu);
              if (up && client_generation != generation) {
                client = op.NewClient(op.token());
                client_generation = generation;
              }
            }
            if (client == nullptr) return false;
            ++create_attempts;
            absl::StatusOr<TrainingJob> created = client->CreateJob(built[i], kNs);
            if (created.ok()) {
              jobs[i].acknowledged = true;
              return true;
            }
            if (absl::IsAlreadyExists(created.status()) && unavailable_before) {
              jobs[i].acknowledged_late = true;
              return true;
            }
            if (absl::IsUnavailable(created.status()) ||
                absl::IsDeadlineExceeded(created.status()) || absl::IsCancelled(created.status())) {
              unavailable_before = true;
              client.reset();
              client_generation = -1;
              return false;
            }
            jobs[i].create_error = created.status().ToString();
            return true;
          },
          absl::InfiniteDuration(), absl::Milliseconds(100));
      // Submissions spread over the kill phase (about 2.15 s between kills on average).
      const double gap = 2.15 * (kills + 1) / std::max<size_t>(jobs.size(), 1);
      absl::SleepFor(absl::Seconds(std::uniform_real_distribution<double>(0, 2 * gap)(pace)));
    }
    submitted = true;
  });

  std::mt19937 chaos(seed + 3);
  std::vector<double> downtimes;
  for (int k = 0; k < kills; ++k) {
    absl::SleepFor(absl::Seconds(std::uniform_real_distribution<double>(0.3, 4.0)(chaos)));
    const absl::Time down = absl::Now();
    {
      std::lock_guard<std::mutex> lock(mu);
      up = false;
      ASSERT_TRUE(op.Kill9().ok());
    }
    absl::SleepFor(absl::Seconds(std::uniform_real_distribution<double>(0.0, 1.0)(chaos)));
    {
      std::lock_guard<std::mutex> lock(mu);
      absl::Status restarted = op.Restart();
      if (!restarted.ok()) {
        submitter.detach();
        FAIL() << "restart " << k + 1 << ": " << restarted << "\n" << op.OperatorLog();
      }
      ++generation;
      up = true;
    }
    downtimes.push_back(absl::ToDoubleSeconds(absl::Now() - down));
  }
  submitter.join();
  const absl::Time kills_done = absl::Now();

  // Every job to an end.
  std::map<std::string, TrainingJob> last;
  const bool all_finished = Eventually(
      [&] {
        absl::StatusOr<std::vector<TrainingJob>> listed = op.client().ListAllJobs(kNs);
        if (!listed.ok()) return false;
        last.clear();
        for (const TrainingJob& j : *listed) last[j.metadata().name()] = j;
        for (const JobPlan& plan : jobs) {
          auto it = last.find(plan.name);
          if (it == last.end() || !sdk::IsJobFinished(it->second)) return false;
        }
        return true;
      },
      absl::Seconds(finish_timeout), absl::Seconds(2));
  const absl::Time finished_at = absl::Now();

  // Starts, per pod.
  std::map<std::string, int> starts;
  int duplicates = 0;
  std::string duplicate_lines;
  for (absl::string_view line :
       absl::StrSplit(ReadFileOrEmpty(dir + "/starts.log"), '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() < 2) continue;
    if (f[0] == "start") ++starts[f[1]];
    if (f[0] == "dup") {
      ++duplicates;
      absl::StrAppend(&duplicate_lines, line, "\n");
    }
  }

  int acknowledged = 0, late = 0, create_errors = 0, lost = 0, unfinished = 0, wrong = 0,
      over_policy = 0, total_starts = 0;
  std::map<std::string, int> per_scenario;
  std::string details;
  for (const JobPlan& plan : jobs) {
    ++per_scenario[ScenarioName(plan.scenario)];
    if (plan.acknowledged) ++acknowledged;
    if (plan.acknowledged_late) ++late;
    if (!plan.create_error.empty()) {
      ++create_errors;
      absl::StrAppend(&details, plan.name, ": CreateJob: ", plan.create_error, "\n");
      continue;
    }
    std::vector<std::string> pods = {plan.name + "-master-0"};
    for (int w = 0; w < plan.workers; ++w) pods.push_back(absl::StrCat(plan.name, "-worker-", w));
    for (const std::string& pod : pods) {
      total_starts += starts[pod];
      if (starts[pod] > plan.max_starts_per_pod) {
        ++over_policy;
        absl::StrAppend(&details, pod, ": ", starts[pod], " starts, policy allows ",
                        plan.max_starts_per_pod, "\n");
      }
    }
    auto it = last.find(plan.name);
    if (it == last.end()) {
      ++lost;
      absl::StrAppend(&details, plan.name, ": lost\n");
      continue;
    }
    if (!sdk::IsJobFinished(it->second)) {
      ++unfinished;
      absl::StrAppend(&details, plan.name, ": unfinished: ", sdk::JobState(it->second), "\n");
      continue;
    }
    bool right = sdk::IsJobSucceeded(it->second) == plan.want_succeeded;
    if (right && plan.scenario == Scenario::kBackoff) {
      right = absl::StrContains(absl::AsciiStrToLower(sdk::ConditionMessage(it->second, "Failed")),
                                "backoff");
    }
    if (!right) {
      ++wrong;
      absl::StrAppend(&details, plan.name, " (", ScenarioName(plan.scenario),
                      "): ", sdk::JobState(it->second), ": ",
                      it->second.status().ShortDebugString(), "\n");
    }
  }

  // Delete every job, stop the operator cleanly, then look for what is left.
  for (const JobPlan& plan : jobs) {
    absl::Status deleted = op.client().DeleteJob(kNs, plan.name);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) ADD_FAILURE() << plan.name << ": " << deleted;
  }
  const bool all_gone = Eventually(
      [&] {
        absl::StatusOr<std::vector<TrainingJob>> listed = op.client().ListAllJobs(kNs);
        return listed.ok() && listed->empty();
      },
      absl::Seconds(120), absl::Seconds(1));
  EXPECT_TRUE(all_gone) << "jobs still listed two minutes after their delete";
  const absl::Status stopped = op.Stop();
  EXPECT_TRUE(stopped.ok()) << stopped;
  // A replica stopping at the delete has its 10 s grace period.
  const std::vector<ProcessInfo> left = op.WaitNoProcesses(absl::Seconds(30));
  const std::vector<std::string> marked = MarkedProcesses(dir);
  const int orphans = static_cast<int>(std::max(left.size(), marked.size()));

  double max_down = 0, sum_down = 0;
  for (double d : downtimes) {
    max_down = std::max(max_down, d);
    sum_down += d;
  }
  std::printf(
      "\nlocal chaos (seed %d): %d jobs (succeed %d, fail %d, recover %d, backoff %d), %d "
      "SIGKILLs\n",
      seed, job_count, per_scenario["succeed"], per_scenario["fail"], per_scenario["recover"],
      per_scenario["backoff"], kills);
  std::printf("| count | value | must be |\n|---|---|---|\n");
  std::printf("| CreateJob calls (incl. retries while down) | %d | |\n", create_attempts.load());
  std::printf("| acknowledged (CreateJob OK) | %d | |\n", acknowledged);
  std::printf("| stored by an attempt whose answer was lost (AlreadyExists on retry) | %d | |\n",
              late);
  std::printf("| CreateJob errors other than Unavailable | %d | 0 |\n", create_errors);
  std::printf("| replica starts | %d | |\n", total_starts);
  std::printf("| concurrent duplicate replicas (lock held at start) | %d | 0 |\n", duplicates);
  std::printf("| replicas started more often than their restart policy allows | %d | 0 |\n",
              over_policy);
  std::printf("| lost jobs | %d | 0 |\n", lost);
  std::printf("| unfinished jobs (after %d s) | %d | 0 |\n", finish_timeout, unfinished);
  std::printf("| wrong end states | %d | 0 |\n", wrong);
  std::printf("| orphan processes after delete + clean stop | %d | 0 |\n", orphans);
  std::printf("| operator down per kill (kill to ready), mean / max s | %.2f / %.2f | |\n",
              downtimes.empty() ? 0.0 : sum_down / downtimes.size(), max_down);
  std::printf("| kill phase / all finished after it / whole run, s | %.0f / %.0f / %.0f | |\n",
              absl::ToDoubleSeconds(kills_done - began),
              absl::ToDoubleSeconds(finished_at - kills_done),
              absl::ToDoubleSeconds(absl::Now() - began));
  std::fflush(stdout);

  EXPECT_TRUE(all_finished);
  EXPECT_EQ(create_errors, 0);
  EXPECT_EQ(duplicates, 0) << duplicate_lines;
  EXPECT_EQ(over_policy, 0);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(unfinished, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(orphans, 0) << DescribeProcesses(left) << absl::StrJoin(marked, "\n");
  EXPECT_EQ(acknowledged + late, job_count);
  if (HasFailure()) {
    std::fprintf(stderr, "%s\nstarts.log:\n%s\n", details.c_str(),
                 ReadFileOrEmpty(dir + "/starts.log").c_str());
    std::fprintf(stderr, "%s\n", op.OperatorLog().c_str());
  }
}

}  // namespace
}  // namespace coach::e2e
