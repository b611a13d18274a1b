#include "sdk/cpp/cli/coach_status_text.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "api/v1/recovery_annotations.h"
#include "sdk/cpp/cli/table_printer.h"

namespace coach::cli {
namespace {

using api::v1::CoachJobStatus;
using api::v1::TrainingJob;

using api::v1::kAnnotationMaxRestarts;
using api::v1::kAnnotationMaxRestartsPrefix;
using api::v1::kAnnotationRestartMode;
using api::v1::kAnnotationRestartScope;

const std::string* Annotation(const TrainingJob& job, const std::string& name) {
  auto it = job.metadata().annotations().find(name);
  return it == job.metadata().annotations().end() ? nullptr : &it->second;
}

// The count an annotation holds: digits only, as admission takes them.
std::optional<int> Count(const std::string* value) {
  int n = 0;
  if (value == nullptr || value->empty() ||
      value->find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(*value, &n)) {
    return std::nullopt;
  }
  return n;
}

std::string Counted(int restarts, std::optional<int> budget) {
  return budget.has_value() ? absl::StrCat(restarts, " of ", *budget) : absl::StrCat(restarts);
}

bool HasAttempts(const TrainingJob& job) {
  const CoachJobStatus& coach = job.status().coach();
  const std::string* scope = Annotation(job, kAnnotationRestartScope);
  return coach.attempt() != 0 || coach.restarts() != 0 || coach.disruptions() != 0 ||
         !coach.restarts_by_type().empty() || coach.has_attempt_running_time() ||
         (scope != nullptr && *scope == "Job");
}

// "2024-05-01T12:00:00Z (5m ago)".
std::string TimeAndAge(const google::protobuf::Timestamp& time, absl::Time now) {
  return absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(time.seconds()),
                                       absl::UTCTimeZone()),
                      " (", FormatAgeSince(time, now), " ago)");
}

// "  Label:   value", the values of a section in one column.
void Line(std::ostream& out, const std::string& label, const std::string& value) {
  constexpr size_t kLabelWidth = 18;
  out << "  " << label << std::string(std::max(kLabelWidth, label.size() + 1) - label.size(), ' ')
      << value << "\n";
}

void PrintRecovery(const TrainingJob& job, absl::Time now, std::ostream& out) {
  const CoachJobStatus& coach = job.status().coach();
  out << "Recovery:\n";
  std::string attempt = absl::StrCat(coach.attempt());
  if (coach.has_attempt_running_time()) {
    absl::StrAppend(&attempt, ", running since ", TimeAndAge(coach.attempt_running_time(), now));
  }
  Line(out, "Attempt:", attempt);
  std::optional<int> budget;
  if (const std::string* annotation = Annotation(job, kAnnotationMaxRestarts)) {
    budget = Count(annotation);
  } else if (job.spec().run_policy().has_backoff_limit()) {
    budget = job.spec().run_policy().backoff_limit();
  }
  Line(out, "Restarts:", Counted(coach.restarts(), budget));
  Line(out, "Disruptions:", absl::StrCat(coach.disruptions()));
  if (!coach.restarts_by_type().empty()) {
    const std::map<std::string, int> by_type(coach.restarts_by_type().begin(),
                                             coach.restarts_by_type().end());
    std::vector<std::string> cells;
    for (const auto& [type, restarts] : by_type) {
      cells.push_back(
          absl::StrCat(type, "=",
                       Counted(restarts, Count(Annotation(job, kAnnotationMaxRestartsPrefix +
                                                                   absl::AsciiStrToLower(type))))));
    }
    Line(out, "Restarts by type:", absl::StrJoin(cells, ", "));
  }
  const std::string* mode = Annotation(job, kAnnotationRestartMode);
  if (coach.in_place_restarts() != 0 || (mode != nullptr && *mode == "InPlace")) {
    Line(out, "In place:",
         absl::StrCat(coach.in_place_restarts(), " (ranks restarted inside their pods)"));
  }
  if (coach.has_restart_time()) Line(out, "Last restart:", TimeAndAge(coach.restart_time(), now));
}

void PrintProgress(const api::v1::JobProgress& progress, absl::Time now, std::ostream& out) {
  out << "Progress:\n";
  Line(out, "Step:", absl::StrCat(progress.step()));
  Line(out, "Steps/s:",
       progress.steps_per_second() == 0 ? "-" : absl::StrCat(progress.steps_per_second()));
  Line(out, "Last progress:",
       progress.has_last_progress_time() ? TimeAndAge(progress.last_progress_time(), now) : "-");
  if (progress.metrics().empty()) return;
  // Sorted: a protobuf map has no order.
  const std::map<std::string, double> metrics(progress.metrics().begin(), progress.metrics().end());
  out << "  Metrics:\n";
  for (const auto& [name, value] : metrics) {
    out << "    " << name << "=" << absl::StrCat(value) << "\n";
  }
}

// "2024-05-01T12:00:00Z"; "-" when unset.
std::string Time(const google::protobuf::Timestamp& time) {
  if (time.seconds() == 0 && time.nanos() == 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(time.seconds()),
                          absl::UTCTimeZone());
}

absl::Time ToTime(const google::protobuf::Timestamp& time) {
  return absl::FromUnixSeconds(time.seconds()) + absl::Nanoseconds(time.nanos());
}

std::string Exit(const api::v1::JobAttempt& attempt) {
  if (!attempt.has_exit_code()) return attempt.signal().empty() ? "-" : attempt.signal();
  if (attempt.signal().empty()) return absl::StrCat(attempt.exit_code());
  return absl::StrCat(attempt.exit_code(), " ", attempt.signal());
}

// Replicas of one attempt share few nodes, and a job of hundreds of replicas must not make a
// row hundreds of names wide.
std::string Nodes(const api::v1::JobAttempt& attempt) {
  constexpr size_t kShown = 2;
  std::set<std::string> nodes;
  for (const auto& [replica, node] : attempt.nodes()) {
    if (!node.empty()) nodes.insert(node);
  }
  if (nodes.empty()) return "-";
  if (nodes.size() <= kShown + 1) return absl::StrJoin(nodes, ",");
  auto end = nodes.begin();
  std::advance(end, kShown);
  return absl::StrCat(absl::StrJoin(nodes.begin(), end, ","), " +", nodes.size() - kShown, " more");
}

std::vector<std::string> AttemptRow(const TrainingJob& job, const api::v1::JobAttempt& attempt,
                                    absl::Time now, bool deleted) {
  const bool open = !attempt.has_end_time();
  std::string end = Time(attempt.end_time());
  if (open) end = deleted ? "-" : "running";
  std::string duration = "-";
  if (attempt.has_start_time()) {
    duration = FormatSpan((open ? now : ToTime(attempt.end_time())) - ToTime(attempt.start_time()));
  }
  int64_t step = attempt.last_step();
  // The operator writes an attempt's step when it closes it (a running job's status is not
  // rewritten for every step), so the open attempt's is the job's latest progress report.
  if (open && step == 0) {
    const api::v1::JobProgress& progress = job.status().coach().progress();
    if (progress.has_last_progress_time() && attempt.has_start_time() &&
        ToTime(progress.last_progress_time()) >= ToTime(attempt.start_time())) {
      step = progress.step();
    }
  }
  return {absl::StrCat(attempt.attempt()),
          Time(attempt.start_time()),
          end,
          duration,
          attempt.reason().empty() ? "-" : attempt.reason(),
          attempt.replica().empty() ? "-" : attempt.replica(),
          Exit(attempt),
          Nodes(attempt),
          step == 0 ? "-" : absl::StrCat(step),
          attempt.has_steps_lost() ? absl::StrCat(attempt.steps_lost()) : "-",
          open ? "-" : (attempt.counted() ? "yes" : "no")};
}

void PrintElastic(const api::v1::ElasticStatus& elastic, absl::Time now, std::ostream& out) {
  out << "Elastic:\n";
  Line(out, "Workers:",
       absl::StrCat(elastic.workers(), " of ", elastic.min_workers(), "..", elastic.max_workers(),
                    " running"));
  if (elastic.changes().empty()) return;
  TablePrinter table({"CHANGED", "AGE", "WORKERS", "STEP", "WHY"});
  for (const api::v1::WorkerCountChange& change : elastic.changes()) {
    table.AddRow(
        {Time(change.time()), change.has_time() ? FormatSpan(now - ToTime(change.time())) : "-",
         absl::StrCat(change.workers()), change.step() == 0 ? "-" : absl::StrCat(change.step()),
         change.why().empty() ? "-" : change.why()});
  }
  table.Print(out, "  ");
}

}  // namespace

std::string FormatSpan(absl::Duration span) {
  if (span <= absl::ZeroDuration()) return "0s";
  const int64_t seconds = absl::ToInt64Seconds(span);
  struct Unit {
    int64_t seconds;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  for (size_t i = 0; i + 1 < std::size(kUnits); ++i) {
    if (seconds < kUnits[i].seconds) continue;
    const int64_t major = seconds / kUnits[i].seconds;
    const int64_t minor = seconds % kUnits[i].seconds / kUnits[i + 1].seconds;
    return minor == 0 ? absl::StrCat(major, kUnits[i].name)
                      : absl::StrCat(major, kUnits[i].name, minor, kUnits[i + 1].name);
  }
  return absl::StrCat(seconds, "s");
}

void PrintAttemptTimeline(const TrainingJob& job, absl::Time now, bool deleted, std::ostream& out,
                          const std::string& indent) {
  const auto& attempts = job.status().coach().attempts();
  if (attempts.empty()) return;
  TablePrinter table({"ATTEMPT", "START", "END", "DURATION", "REASON", "REPLICA", "EXIT", "NODES",
                      "LAST STEP", "LOST", "COUNTED"});
  int next = 0;
  for (const api::v1::JobAttempt& attempt : attempts) {
    // The status keeps the first attempt and the latest ones; a gap says how many it let go,
    // so that attempt numbers that jump are not read as attempts that never ran.
    if (attempt.attempt() > next) {
      const int last_gone = attempt.attempt() - 1;
      table.AddRow({last_gone == next ? absl::StrCat(next) : absl::StrCat(next, "-", last_gone),
                    "(not kept)"});
    }
    table.AddRow(AttemptRow(job, attempt, now, deleted));
    next = std::max(next, attempt.attempt() + 1);
  }
  table.Print(out, indent);
  for (const api::v1::JobAttempt& attempt : attempts) {
    if (attempt.message().empty()) continue;
    // A message may span lines (a replica's last words); its later lines stay under its first.
    out << indent << "attempt " << attempt.attempt() << ": "
        << absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(attempt.message()),
                               {{"\n", absl::StrCat("\n", indent, "  ")}})
        << "\n";
  }
}

void PrintCoachStatus(const TrainingJob& job, absl::Time now, std::ostream& out) {
  if (!job.status().has_coach()) return;
  if (HasAttempts(job)) PrintRecovery(job, now, out);
  if (!job.status().coach().attempts().empty()) {
    out << "Attempts:\n";
    PrintAttemptTimeline(job, now, /*deleted=*/false, out, "  ");
  }
  if (job.status().coach().has_elastic()) PrintElastic(job.status().coach().elastic(), now, out);
  if (job.status().coach().has_progress()) PrintProgress(job.status().coach().progress(), now, out);
}

}  // namespace coach::cli
