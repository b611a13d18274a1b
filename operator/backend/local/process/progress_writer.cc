#include "operator/backend/local/process/progress_writer.h"

#include <algorithm>
#include <utility>

#include "operator/backend/local/process/progress_file.h"

namespace coach::backend::local {

ProgressWriter::ProgressWriter(std::string replica_files, Clock* clock, absl::Duration interval)
    : replica_files_(std::move(replica_files)), clock_(clock), interval_(interval) {}

void ProgressWriter::Feed(absl::string_view data) {
  // One reading of the clocks for all the lines of one read: they came together.
  std::optional<std::pair<absl::Time, absl::Duration>> now;
  scanner_.Feed(data, [&](const metrics::MetricLine& line) {
    if (!now.has_value()) now.emplace(clock_->Now(), clock_->Monotonic());
    tracker_.Observe(line, now->first, now->second);
    pending_ = true;
  });
}

std::optional<absl::Duration> ProgressWriter::UntilDue() {
  if (!pending_) return std::nullopt;
  if (!last_write_.has_value()) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(), *last_write_ + interval_ - clock_->Monotonic());
}

void ProgressWriter::WriteIfDue() {
  std::optional<absl::Duration> due = UntilDue();
  if (due.has_value() && *due <= absl::ZeroDuration()) Write();
}

void ProgressWriter::Flush() {
  if (pending_) Write();
}

void ProgressWriter::Write() {
  last_write_ = clock_->Monotonic();
  // A failed write (a full disk) leaves the write pending: it is tried again when due.
  if (WriteProgressFile(replica_files_, tracker_.record()).ok()) {
    pending_ = false;
    ++writes_;
  }
}

}  // namespace coach::backend::local
