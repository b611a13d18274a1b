#include "sdk/cpp/cli/table_printer.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"
#include "sdk/cpp/job_status.h"

namespace coach::cli {

TablePrinter::TablePrinter(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void TablePrinter::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void TablePrinter::Print(std::ostream& out, const std::string& indent) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t i = 0; i < headers_.size(); ++i) widths[i] = headers_[i].size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    // Empty trailing cells (a MESSAGE with nothing to say) leave no trailing blanks.
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  };
  print_row(headers_);
  for (const auto& row : rows_) print_row(row);
}

std::string FormatAge(absl::Duration age) {
  if (age < absl::ZeroDuration()) return "0s";
  int64_t seconds = absl::ToInt64Seconds(age);
  if (seconds < 60) return absl::StrCat(seconds, "s");
  int64_t minutes = seconds / 60;
  if (minutes < 60) return absl::StrCat(minutes, "m");
  int64_t hours = minutes / 60;
  if (hours < 24) return absl::StrCat(hours, "h");
  int64_t days = hours / 24;
  if (days < 365) return absl::StrCat(days, "d");
  return absl::StrCat(days / 365, "y");
}

std::string FormatAgeSince(const google::protobuf::Timestamp& timestamp, absl::Time now) {
  if (timestamp.seconds() == 0 && timestamp.nanos() == 0) return "<unknown>";
  absl::Time then =
      absl::FromUnixSeconds(timestamp.seconds()) + absl::Nanoseconds(timestamp.nanos());
  return FormatAge(now - then);
}

std::string KindName(const api::v1::TrainingJob& job) {
  const api::v1::KindInfo* info = api::v1::FindKind(job.kind());
  return info == nullptr ? "Unknown" : std::string(info->name);
}

std::string ReplicaSummary(const api::v1::TrainingJob& job) {
  int64_t total = 0;
  for (const auto& [type, spec] : job.spec().replica_specs()) {
    total += spec.has_replicas() ? spec.replicas() : 1;
  }
  // A TrainJob's pod counts come from its runtime: the operator writes them into its status.
  for (const auto& [type, status] : job.status().replica_statuses()) total += status.replicas();
  int64_t active = 0;
  for (const auto& [type, status] : job.status().replica_statuses()) active += status.active();
  return absl::StrCat(active, "/", total);
}

std::string StateMessage(const api::v1::TrainingJob& job) {
  const std::string state = sdk::JobState(job);
  // Queued: where Kueue holds the job and why (operator/reconcile/queue_wait.h).
  if (state == "Failed" || state == "Restarting" || state == sdk::kQueued) {
    return sdk::ConditionMessage(job, state);
  }
  if (state != "Created") return "";
  // A waiting job's Created condition says why it waits (operator/reconcile/pending.h); its
  // first words ("PyTorchJob x is created.") say nothing the row does not.
  const std::string message = sdk::ConditionMessage(job, state);
  return absl::EndsWith(message, " is created.") ? "" : message;
}

std::string ProgressStep(const api::v1::TrainingJob& job) {
  if (!job.status().coach().has_progress()) return "-";
  return absl::StrCat(job.status().coach().progress().step());
}

std::string LastProgressAge(const api::v1::TrainingJob& job, absl::Time now) {
  const api::v1::JobProgress& progress = job.status().coach().progress();
  if (!progress.has_last_progress_time()) return "-";
  return FormatAgeSince(progress.last_progress_time(), now);
}

std::vector<std::string> JobTableHeaders(bool with_namespace) {
  std::vector<std::string> headers = {"NAME", "KIND", "STATE",         "REPLICAS",
                                      "AGE",  "STEP", "LAST-PROGRESS", "MESSAGE"};
  if (with_namespace) headers.insert(headers.begin(), "NAMESPACE");
  return headers;
}

std::vector<std::string> JobTableRow(const api::v1::TrainingJob& job, absl::Time now,
                                     bool with_namespace) {
  std::string state = sdk::JobState(job);
  std::vector<std::string> row = {job.metadata().name(),
                                  KindName(job),
                                  state.empty() ? "Pending" : state,
                                  ReplicaSummary(job),
                                  FormatAgeSince(job.metadata().creation_timestamp(), now),
                                  ProgressStep(job),
                                  LastProgressAge(job, now),
                                  StateMessage(job)};
  if (with_namespace) row.insert(row.begin(), job.metadata().namespace_());
  return row;
}

}  // namespace coach::cli
