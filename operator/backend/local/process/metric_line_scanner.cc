#include "operator/backend/local/process/metric_line_scanner.h"

#include <string.h>

#include <algorithm>
#include <optional>

namespace coach::backend::local {
namespace {

constexpr absl::string_view kPrefix = "coach-metric";
constexpr absl::string_view kNextCandidate = "\ncoach-metric";

}  // namespace

void MetricLineScanner::Feed(absl::string_view data, Sink sink) {
  while (!data.empty()) {
    if (state_ == State::kSkipping) {
      const void* hit =
          memmem(data.data(), data.size(), kNextCandidate.data(), kNextCandidate.size());
      if (hit != nullptr) {
        data.remove_prefix(static_cast<const char*>(hit) - data.data() + 1);
        state_ = State::kLineStart;
        continue;
      }
      // No whole prefix after a line end here; the last line may start with a part of one.
      const void* last_nl = memrchr(data.data(), '\n', data.size());
      if (last_nl == nullptr) return;  // the skipped line goes on
      data.remove_prefix(static_cast<const char*>(last_nl) - data.data() + 1);
      state_ = State::kLineStart;
      continue;
    }
    const void* nl = memchr(data.data(), '\n', data.size());
    const size_t end = nl != nullptr ? static_cast<const char*>(nl) - data.data() : data.size();
    const absl::string_view piece = data.substr(0, end);
    // Only the part of the prefix this line has not matched yet is compared.
    const size_t matched = std::min(line_.size(), kPrefix.size());
    const size_t compare = std::min(kPrefix.size() - matched, piece.size());
    if (piece.substr(0, compare) != kPrefix.substr(matched, compare) ||
        line_.size() + piece.size() > kMaxLine) {
      // Not a metric line (or one too long to keep): skipping starts inside it, so the search
      // finds the next line's start.
      line_.clear();
      state_ = State::kSkipping;
      continue;
    }
    line_.append(piece.data(), piece.size());
    if (nl == nullptr) {
      state_ = State::kCandidate;
      return;
    }
    data.remove_prefix(end + 1);
    state_ = State::kLineStart;
    if (line_.empty()) continue;  // an empty line
    absl::StatusOr<std::optional<metrics::MetricLine>> parsed = metrics::ParseMetricLine(line_);
    line_.clear();
    if (!parsed.ok()) {
      ++malformed_;
    } else if (parsed->has_value()) {
      sink(**parsed);
    }
  }
}

}  // namespace coach::backend::local
