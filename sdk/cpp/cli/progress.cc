#include "sdk/cpp/cli/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sdk/cpp/job_status.h"

namespace coach::cli {

std::string ProgressLine(const api::v1::TrainingJob& job) {
  int64_t total = 0;
  for (const auto& [type, spec] : job.spec().replica_specs()) {
    total += spec.has_replicas() ? spec.replicas() : 1;
  }
  int64_t active = 0, succeeded = 0, failed = 0;
  for (const auto& [type, status] : job.status().replica_statuses()) {
    active += status.active();
    succeeded += status.succeeded();
    failed += status.failed();
  }
  int64_t starting = std::max<int64_t>(0, total - active - succeeded - failed);
  std::string state = sdk::JobState(job);
  return absl::StrCat(job.metadata().namespace_(), "/", job.metadata().name(), " ",
                      state.empty() ? "Pending" : state, ": ", starting, " starting, ", active,
                      " running, ", succeeded, " succeeded, ", failed, " failed (of ", total, ")");
}

void ProgressReporter::Update(const api::v1::TrainingJob& job) {
  std::string line = ProgressLine(job);
  if (line == last_) return;
  last_ = line;
  if (interactive_) {
    // Carriage return and erase-line: rewrite in place, even when the new line is shorter.
    out_ << "\r\033[K" << line << std::flush;
    line_open_ = true;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

void ProgressReporter::Finish() {
  if (line_open_) out_ << "\n" << std::flush;
  line_open_ = false;
}

}  // namespace coach::cli
