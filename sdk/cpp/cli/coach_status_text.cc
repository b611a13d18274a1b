#include "sdk/cpp/cli/coach_status_text.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

}  // namespace

void PrintCoachStatus(const TrainingJob& job, absl::Time now, std::ostream& out) {
  if (!job.status().has_coach()) return;
  if (HasAttempts(job)) PrintRecovery(job, now, out);
  if (job.status().coach().has_progress()) PrintProgress(job.status().coach().progress(), now, out);
}

}  // namespace coach::cli
