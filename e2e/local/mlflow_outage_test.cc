// Chaos: the MLflow server down for COACH_MLFLOW_OUTAGE_SECONDS (default 20,
// so that `make test` stays within a few minutes; the full figure is 60, run by hand:
// --test_env=COACH_MLFLOW_OUTAGE_SECONDS=60) while two jobs log metrics through coach-launch, then
// restarted on the same backend store. The real coach-operator (local backend), coach-launch and
// `mlflow server` (integrations/mlflow/testing/mlflow_server.h); fails under CI=true without
// MLflow.
//
// Both jobs print one `coach-metric` line every 0.1 s until the test ends them, before, during and
// after the outage:
// - "roomy": the launcher's default buffer (1048576 points) holds the whole outage: every point
//   logged is in MLflow (distinct steps counted there), none dropped.
// - "tight": COACH_METRICS_BUFFER=100, far below the outage's points: delivered (counted in MLflow)
//   + dropped (the run's coach.mlflow.undelivered_points tag, and the launcher's summary) ==
//   logged, exactly, and something was dropped.
// Both runs end FINISHED with coach.state=Succeeded. Prints a table of the counts.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/mlflow_operator_test.h"
#include "gtest/gtest.h"
#include "integrations/mlflow/testing/mlflow_server.h"
#include "nlohmann/json.hpp"
#include "operator/reconcile/conditions.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;
using mlflow::testing::MlflowServer;
using Json = nlohmann::json;

constexpr char kLossTag[] = "coach.mlflow.undelivered_points";

int OutageSeconds() {
  int seconds = 20;
  const std::string text = EnvOrEmpty("COACH_MLFLOW_OUTAGE_SECONDS");
  if (!text.empty() && (!absl::SimpleAtoi(text, &seconds) || seconds < 1)) {
    ADD_FAILURE() << "COACH_MLFLOW_OUTAGE_SECONDS: not a positive integer: '" << text << "'";
    return 20;
  }
  return seconds;
}

// What one job's replica log and run say.
struct Counts {
  int64_t logged = -1;          // the script's own count ("logged N")
  int64_t metric_lines = 0;     // coach-metric lines in the replica log
  int64_t in_mlflow = -1;       // points in the run's history
  int64_t distinct_steps = -1;  // distinct steps there (a re-sent batch may repeat points)
  int64_t loss_tag = 0;         // the run's coach.mlflow.undelivered_points (0 when absent)
  int64_t summary_delivered = -1, summary_dropped = -1, summary_not_delivered = -1;
  std::string run_status, state_tag;
};

// "coach-launch: metrics: N line(s), D delivered to MLflow run R, U not delivered (X dropped, ..."
void ParseSummary(const std::string& log, Counts* c) {
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StartsWith(line, "coach-launch: metrics: ")) continue;
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    for (size_t i = 1; i < words.size(); ++i) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(words[i - 1], &n) && !absl::SimpleAtoi(words[i - 1].substr(1), &n)) {
        continue;
      }
      if (words[i] == "delivered") c->summary_delivered = n;
      if (words[i] == "not") c->summary_not_delivered = n;
      if (words[i] == "dropped,") c->summary_dropped = n;
    }
  }
}

class MlflowOutageTest : public MlflowOperatorTest {
 protected:
  // Reads the run until it is FINISHED (the tracker ends it asynchronously) or 90 s pass.
  Json ReadFinishedRun(const std::string& run_id) {
    Json run;
    bool unreadable = false;
    const bool finished = Eventually(
        [&] {
          run = ReadRun(run_id, {"--metric", "tick"});
          unreadable = run.empty();
          return unreadable || run.value("status", "") == "FINISHED";
        },
        absl::Seconds(90), absl::Milliseconds(500));
    if (unreadable) return Json::object();
    if (finished) return run;
    ADD_FAILURE() << "run " << run_id << " never FINISHED: " << run.dump();
    return run;
  }

  Counts CountsOf(const std::string& job, const std::string& run_id) {
    Counts c;
    const std::string log = op_->Logs(job, "master-0").value_or("");
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      if (absl::StartsWith(line, "coach-metric name=tick ")) ++c.metric_lines;
      if (absl::StartsWith(line, "logged ")) {
        if (!absl::SimpleAtoi(line.substr(7), &c.logged)) c.logged = -1;
      }
    }
    ParseSummary(log, &c);
    Json run = ReadFinishedRun(run_id);
    c.run_status = run.value("status", "");
    if (run.contains("tags")) {
      c.state_tag = run["tags"].value("coach.state", "");
      const std::string loss = run["tags"].value(kLossTag, "0");
      if (!absl::SimpleAtoi(loss, &c.loss_tag)) c.loss_tag = -1;
    }
    if (run.contains("metrics") && run["metrics"].contains("tick")) {
      c.in_mlflow = run["metrics"]["tick"]["count"].get<int64_t>();
      c.distinct_steps = run["metrics"]["tick"]["distinct_steps"].get<int64_t>();
    }
    return c;
  }
};

TEST_F(MlflowOutageTest, ServerDownDuringTrainingBufferedPointsDeliveredOverflowCounted) {
  const int outage = OutageSeconds();
  COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());
  uri_ = server->uri();
  ASSERT_NO_FATAL_FAILURE(StartWithMlflow(uri_, {}, "outage", "mlflow-outage"));

  const std::string end_mark = op_->root() + "/end";
  // One point per 0.1 s until the test writes the end mark; the last line says how many.
  const std::string script = absl::StrCat(
      "exec coach-launch -- sh -c 'i=0; while [ ! -e ", end_mark,
      " ]; do echo \"coach-metric name=tick value=$i step=$i\"; i=$((i+1)); sleep 0.1; done; "
      "echo \"logged $i\"'");
  for (const char* name : {"roomy", "tight"}) {
    sdk::JobBuilder job = ShellJob(name, script)
                              .Masters(1)
                              .RestartPolicy("Never")
                              .Env("COACH_METRICS_FLUSH_TIMEOUT", "60");
    if (std::string(name) == "tight") job.Env("COACH_METRICS_BUFFER", "100");
    absl::StatusOr<TrainingJob> created = op_->client().CreateJob(BuildOrDie(job), kNs);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  const std::string roomy_run = RunIdOf("roomy", absl::Seconds(120));
  const std::string tight_run = RunIdOf("tight", absl::Seconds(120));
  ASSERT_FALSE(roomy_run.empty());
  ASSERT_FALSE(tight_run.empty());
  ASSERT_TRUE(
      op_->WaitJob("tight", [](const TrainingJob& j) { return sdk::IsJobRunning(j); }).ok());
  absl::SleepFor(absl::Seconds(3));  // some points delivered before the outage

  const absl::Time stopping = absl::Now();
  ASSERT_TRUE(server->Stop().ok());
  const absl::Time down = absl::Now();
  absl::SleepFor(absl::Seconds(outage));
  const absl::Time restarting = absl::Now();
  ASSERT_TRUE(server->Restart().ok());
  const double down_for = absl::ToDoubleSeconds(absl::Now() - stopping);
  const double restart_s = absl::ToDoubleSeconds(absl::Now() - restarting);
  const double stop_s = absl::ToDoubleSeconds(down - stopping);
  absl::SleepFor(absl::Seconds(5));  // more points after the server is back
  WriteFileOrDie(end_mark, "");

  for (const char* name : {"roomy", "tight"}) {
    absl::StatusOr<TrainingJob> done = op_->WaitJob(
        name, [](const TrainingJob& j) { return reconcile::IsFinished(j.status()); },
        absl::Minutes(3));
    ASSERT_TRUE(done.ok()) << name << ": " << done.status();
    EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << name << ": " << done->status().ShortDebugString();
  }
  const Counts roomy = CountsOf("roomy", roomy_run);
  const Counts tight = CountsOf("tight", tight_run);

  std::printf(
      "\nMLflow server down %.1f s (stop %.1f s, stopped %d s, restart until healthy %.1f s), "
      "one point per 0.1 s per job\n",
      down_for, stop_s, outage, restart_s);
  std::printf("| count | roomy (buffer 1048576) | tight (buffer 100) |\n|---|---|---|\n");
  auto row = [](const char* what, int64_t a, int64_t b) {
    std::printf("| %s | %lld | %lld |\n", what, static_cast<long long>(a),
                static_cast<long long>(b));
  };
  row("logged (the script's count)", roomy.logged, tight.logged);
  row("coach-metric lines in the replica log", roomy.metric_lines, tight.metric_lines);
  row("distinct steps in MLflow (delivered)", roomy.distinct_steps, tight.distinct_steps);
  row("points in MLflow's history", roomy.in_mlflow, tight.in_mlflow);
  row("dropped: run tag coach.mlflow.undelivered_points", roomy.loss_tag, tight.loss_tag);
  row("launcher summary: delivered", roomy.summary_delivered, tight.summary_delivered);
  row("launcher summary: dropped", roomy.summary_dropped, tight.summary_dropped);
  row("delivered + dropped - logged", roomy.distinct_steps + roomy.loss_tag - roomy.logged,
      tight.distinct_steps + tight.loss_tag - tight.logged);
  std::printf("| run status / coach.state | %s / %s | %s / %s |\n", roomy.run_status.c_str(),
              roomy.state_tag.c_str(), tight.run_status.c_str(), tight.state_tag.c_str());
  std::fflush(stdout);

  for (const Counts* c : {&roomy, &tight}) {
    EXPECT_GT(c->logged, 10 * outage) << "the script logged through the whole outage";
    EXPECT_EQ(c->metric_lines, c->logged);
    EXPECT_EQ(c->run_status, "FINISHED");
    EXPECT_EQ(c->state_tag, "Succeeded");
    // Exactly: every point is either in MLflow or counted as dropped.
    EXPECT_EQ(c->distinct_steps + c->loss_tag, c->logged);
    EXPECT_EQ(c->summary_delivered, c->distinct_steps);
    EXPECT_EQ(c->summary_dropped, c->loss_tag);
    EXPECT_EQ(c->summary_not_delivered, c->loss_tag) << "only drops, no rejects or leftovers";
  }
  // Within the bound: all delivered.
  EXPECT_EQ(roomy.loss_tag, 0);
  EXPECT_EQ(roomy.distinct_steps, roomy.logged);
  // Beyond it: the outage's points past 100 were dropped, the rest delivered.
  EXPECT_GT(tight.loss_tag, 10 * outage - 200);
  EXPECT_GE(tight.distinct_steps, 100);
}

}  // namespace
}  // namespace coach::e2e
