#include "e2e/local/history_job.h"

#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/testing/eventually.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::JobAttempt;
using api::v1::TrainingJob;

// Every replica prints its hello line, a progress line of step 10 * (attempt + 1) and whether it
// sees the history store's secret. In the first $FAILING attempts worker-1 (rank 2) SIGKILLs
// itself once the other two printed (so that each attempt's three logs hold their line) while
// they sleep until the restart stops them; in the last one the Workers exit 0 and the Master
// follows them (a Worker still running when the Master ends is counted nowhere). A command's
// "$$" is Kubernetes' escape of "$" (as $(VAR) expansion reads it), so the shell's own pid is
// written "$$$$".
constexpr char kScript[] = R"sh(a=$COACH_ATTEMPT
echo "hello from rank $RANK attempt $a"
echo "store secret: ${AWS_SECRET_ACCESS_KEY:-none}"
echo "coach-metric name=loss value=0.5 step=$(( (a + 1) * 10 ))"
touch "$MARKS/up-$RANK-$a"
wait_for() { while [ ! -e "$1" ]; do sleep 0.05; done; }
if [ "$a" -lt "$FAILING" ]; then
  if [ "$RANK" = 2 ]; then
    wait_for "$MARKS/up-0-$a"
    wait_for "$MARKS/up-1-$a"
    kill -9 $$$$
  fi
  exec sleep 600
fi
if [ "$RANK" != 0 ]; then touch "$MARKS/done-$RANK"; exit 0; fi
wait_for "$MARKS/done-1"
wait_for "$MARKS/done-2"
echo "master done"
)sh";

// The attempt `n` failed because worker-1 was SIGKILLed, spending the budget, with every replica
// on this host and its progress step.
void ExpectKilledAttempt(const JobAttempt& a, int n) {
  SCOPED_TRACE(a.ShortDebugString());
  EXPECT_EQ(a.attempt(), n);
  EXPECT_EQ(a.reason(), "Failed");
  EXPECT_EQ(a.replica(), "worker-1");
  EXPECT_TRUE(a.has_exit_code());
  EXPECT_EQ(a.exit_code(), 137);
  EXPECT_EQ(a.signal(), "SIGKILL");
  EXPECT_TRUE(a.counted());
  EXPECT_FALSE(a.message().empty());
  EXPECT_TRUE(a.has_start_time());
  EXPECT_TRUE(a.has_end_time());
  EXPECT_EQ(a.last_step(), 10 * (n + 1));
  const std::string host = ThisHostName();
  EXPECT_EQ((std::map<std::string, std::string>(a.nodes().begin(), a.nodes().end())),
            (std::map<std::string, std::string>{
                {"master-0", host}, {"worker-0", host}, {"worker-1", host}}));
}

void ExpectSucceededAttempt(const JobAttempt& a, int n) {
  SCOPED_TRACE(a.ShortDebugString());
  EXPECT_EQ(a.attempt(), n);
  EXPECT_EQ(a.reason(), "Succeeded");
  EXPECT_FALSE(a.counted());
  EXPECT_TRUE(a.has_end_time());
  EXPECT_EQ(a.last_step(), 10 * (n + 1));
}

}  // namespace

std::string Hello(int rank, int attempt) {
  return absl::StrCat("hello from rank ", rank, " attempt ", attempt, "\n");
}

JobManifest RestartingJob(const std::string& name, const std::string& marks, int failing) {
  return JobManifest::PyTorch(name)
      .Annotation("coach.dev/restart-scope", "Job")
      .Annotation("coach.dev/max-restarts", "3")
      .Replicas({{"Master", 1}, {"Worker", 2}})
      .RestartPolicy("OnFailure")
      .Image(kShellImage)
      .Command({"/bin/sh", "-c", kScript})
      .Env("MARKS", marks)
      .Env("FAILING", absl::StrCat(failing));
}

std::string ThisHostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

LogRead ReadLogs(sdk::TrainingClient& client, const std::string& name, const std::string& replica,
                 std::optional<int> attempt, const std::string& uid) {
  sdk::LogOptions options;
  options.namespace_ = kNs;
  options.name = name;
  options.replica = replica;
  options.attempt = attempt;
  options.uid = uid;
  LogRead read;
  read.status = client.GetJobLogs(options, [&](const api::v1::LogChunk& chunk) {
    read.text += chunk.data();
    read.sources.emplace(chunk.replica(), chunk.source());
    read.attempts.insert(chunk.attempt());
    return true;
  });
  return read;
}

void ExpectAttemptLog(sdk::TrainingClient& client, const std::string& name, size_t replica_index,
                      int attempt, const std::string& source, const std::string& uid) {
  const std::string replica = kHistoryReplicas[replica_index];
  SCOPED_TRACE(
      absl::StrCat(name, " ", replica, " attempt ", attempt, uid.empty() ? "" : " uid ", uid));
  const LogRead read = ReadLogs(client, name, replica, attempt, uid);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sources, (std::map<std::string, std::string>{{replica, source}}));
  EXPECT_EQ(read.attempts, std::set<int>{attempt});
  EXPECT_TRUE(absl::StrContains(read.text, Hello(static_cast<int>(replica_index), attempt)))
      << read.text;
  for (int other = 0; other < 4; ++other) {
    if (other == attempt) continue;
    EXPECT_FALSE(absl::StrContains(read.text, Hello(static_cast<int>(replica_index), other)))
        << read.text;
  }
  // The local backend hands a replica PATH, HOME and LANG of the operator's environment, never
  // the store's credentials.
  EXPECT_TRUE(absl::StrContains(read.text, "store secret: none\n")) << read.text;
}

void ExpectTimeline(const TrainingJob& job, int failing) {
  const auto& attempts = job.status().coach().attempts();
  ASSERT_EQ(attempts.size(), failing + 1) << job.status().coach().ShortDebugString();
  for (int n = 0; n < failing; ++n) ExpectKilledAttempt(attempts[n], n);
  ExpectSucceededAttempt(attempts[failing], failing);
}

std::map<int, std::map<std::string, std::string>> AttemptRows(const std::string& text) {
  std::map<int, std::map<std::string, std::string>> rows;
  std::vector<std::pair<size_t, std::string>> columns;  // start, header
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(line);
    if (columns.empty()) {
      if (!absl::StartsWith(trimmed, "ATTEMPT ")) continue;
      // Headers are parted by two spaces or more; "LAST STEP" holds one.
      for (size_t at = line.find_first_not_of(' '); at != absl::string_view::npos;) {
        size_t gap = line.find("  ", at);
        if (gap == absl::string_view::npos) gap = line.size();
        columns.emplace_back(at, std::string(line.substr(at, gap - at)));
        at = line.find_first_not_of(' ', gap);
      }
      continue;
    }
    int n = 0;
    const std::vector<absl::string_view> words = absl::StrSplit(trimmed, ' ');
    if (words.empty() || !absl::SimpleAtoi(words[0], &n)) break;  // the table ended
    std::map<std::string, std::string>& row = rows[n];
    for (size_t i = 0; i < columns.size(); ++i) {
      const size_t from = columns[i].first;
      const size_t to = i + 1 < columns.size() ? columns[i + 1].first : line.size();
      if (from >= line.size()) break;
      row[columns[i].second] =
          std::string(absl::StripAsciiWhitespace(line.substr(from, to - from)));
    }
  }
  return rows;
}

void ExpectAttemptRows(const std::string& text, int failing) {
  const std::map<int, std::map<std::string, std::string>> rows = AttemptRows(text);
  ASSERT_EQ(rows.size(), static_cast<size_t>(failing + 1)) << text;
  for (int n = 0; n <= failing; ++n) {
    std::map<std::string, std::string> row = rows.at(n);
    SCOPED_TRACE(absl::StrCat("attempt ", n, "\n", text));
    EXPECT_EQ(row["ATTEMPT"], absl::StrCat(n));
    EXPECT_EQ(row["REASON"], n < failing ? "Failed" : "Succeeded");
    if (n < failing) {
      EXPECT_EQ(row["REPLICA"], "worker-1");
      EXPECT_EQ(row["EXIT"], "137 SIGKILL");
    }
    EXPECT_EQ(row["NODES"], ThisHostName());
    EXPECT_EQ(row["LAST STEP"], absl::StrCat(10 * (n + 1)));
    EXPECT_EQ(row["COUNTED"], n < failing ? "yes" : "no");
  }
}

TrainingJob RestartingJobTest::RunRestartingJob(const std::string& name, int failing) {
  const std::string marks = absl::StrCat(op_->root(), "/marks-", name);
  EXPECT_EQ(mkdir(marks.c_str(), 0755), 0) << marks;
  absl::StatusOr<TrainingJob> created =
      op_->client().CreateJobFromManifest(RestartingJob(name, marks, failing).Yaml(), kNs);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return {};
  absl::StatusOr<TrainingJob> done = op_->WaitFinished(name, absl::Minutes(2));
  if (!done.ok()) {
    ADD_FAILURE() << done.status();
    return {};
  }
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();
  EXPECT_EQ(done->metadata().uid(), created->metadata().uid());
  return *done;
}

std::string RestartingJobTest::RunTtlJob(const std::string& name, int ttl) {
  absl::StatusOr<TrainingJob> created =
      op_->client().CreateJob(BuildOrDie(ShellJob(name, absl::StrCat("echo ", name, " says bye"))
                                             .Masters(1)
                                             .RestartPolicy("Never")
                                             .TtlSecondsAfterFinished(ttl)),
                              kNs);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return "";
  absl::Status gone = op_->WaitJobGone(name, absl::Seconds(60));
  EXPECT_TRUE(gone.ok()) << gone;
  return created->metadata().uid();
}

absl::StatusOr<api::v1::JobHistory> RestartingJobTest::WaitHistory(const std::string& name,
                                                                   const std::string& uid) {
  absl::StatusOr<api::v1::ListJobHistoriesResponse> last = absl::UnknownError("never listed");
  api::v1::JobHistory found;
  const bool listed = coach::testing::Eventually(
      [&] {
        last = op_->client().ListJobHistories(kNs, name);
        if (!last.ok()) return false;
        for (const api::v1::JobHistory& h : last->histories()) {
          if (h.job().metadata().uid() == uid) {
            found = h;
            return true;
          }
        }
        return false;
      },
      absl::Seconds(60), absl::Milliseconds(200));
  if (listed) return found;
  if (!last.ok()) return last.status();
  return absl::NotFoundError(
      absl::StrCat("no history of ", name, " ", uid, " in ", last->ShortDebugString()));
}

}  // namespace coach::e2e
