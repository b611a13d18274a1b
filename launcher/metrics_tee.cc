#include "launcher/metrics_tee.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace coach::launcher {
namespace {

constexpr int kReportedMalformed = 5;

}  // namespace

MetricsTee::MetricsTee(Sink sink, Report report, Clock* clock)
    : sink_(std::move(sink)), report_(std::move(report)), clock_(clock) {}

MetricsTee::~MetricsTee() {
  if (!finished_) Finish();
}

void MetricsTee::WatchFile(const std::string& path, absl::Duration poll) {
  threads_.emplace_back([this, path, poll] { TailFile(path, poll); });
}

void MetricsTee::OnLine(absl::string_view line) {
  absl::StatusOr<std::optional<metrics::MetricLine>> parsed = metrics::ParseMetricLine(line);
  if (!parsed.ok()) {
    if (malformed_lines_.fetch_add(1) < kReportedMalformed && report_) {
      report_(absl::StrCat("coach-launch: ", parsed.status().message(),
                           " (line not logged to MLflow)"));
    }
    return;
  }
  if (!parsed->has_value()) return;
  metric_lines_.fetch_add(1);
  sink_(**parsed, absl::ToUnixMillis(clock_->Now()));
}

void MetricsTee::TailFile(std::string path, absl::Duration poll) {
  std::ifstream in;
  std::string partial;
  for (;;) {
    const bool last = draining_.load();  // read to the end once more after Finish began
    if (!in.is_open()) in.open(path, std::ios::binary);
    if (in.is_open()) {
      in.clear();
      std::string line;
      while (std::getline(in, line)) {
        if (in.eof()) {  // no '\n' yet: keep it for later
          partial += line;
          break;
        }
        OnLine(partial + line);
        partial.clear();
      }
      in.clear();
    }
    if (last) break;
    absl::SleepFor(poll);
  }
}

void MetricsTee::Finish() {
  if (finished_) return;
  finished_ = true;
  draining_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace coach::launcher
