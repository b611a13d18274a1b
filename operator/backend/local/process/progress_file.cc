#include "operator/backend/local/process/progress_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/exit_record.h"

namespace coach::backend::local {
namespace {

constexpr size_t kMaxMetricName = 250;  // common/metrics/metric_line.h

nlohmann::json ValueToJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

bool ValueFromJson(const nlohmann::json& j, double* out) {
  if (j.is_number()) {
    *out = j.get<double>();
    return true;
  }
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  if (s == "nan") {
    *out = std::numeric_limits<double>::quiet_NaN();
  } else if (s == "inf") {
    *out = std::numeric_limits<double>::infinity();
  } else if (s == "-inf") {
    *out = -std::numeric_limits<double>::infinity();
  } else {
    return false;
  }
  return true;
}

absl::Status Invalid(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("progress file: ", why));
}

// At most kMaxProgressFileBytes + 1 bytes of a regular file: the file is in a directory the
// replica can write to, so it may be anything (huge, a FIFO that would block a plain open).
absl::StatusOr<std::string> ReadBounded(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no file ", path));
    return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Invalid("not a regular file");
  }
  std::string out(static_cast<size_t>(kMaxProgressFileBytes) + 1, '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("read ", path, ": ", strerror(e)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(done);
  return out;
}

}  // namespace

bool ProgressRecord::operator==(const ProgressRecord& o) const {
  if (step != o.step || steps_per_second != o.steps_per_second || time != o.time ||
      metrics.size() != o.metrics.size()) {
    return false;
  }
  for (auto a = metrics.begin(), b = o.metrics.begin(); a != metrics.end(); ++a, ++b) {
    // NaN == NaN here: the same report.
    if (a->first != b->first ||
        !(a->second == b->second || (std::isnan(a->second) && std::isnan(b->second)))) {
      return false;
    }
  }
  return true;
}

std::string ProgressToJson(const ProgressRecord& record) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : record.metrics) metrics[name] = ValueToJson(value);
  nlohmann::json j = {
      {"step", record.step},
      {"metrics", std::move(metrics)},
      {"steps_per_second", std::isfinite(record.steps_per_second) ? record.steps_per_second : 0},
      {"time", absl::FormatTime(absl::RFC3339_full, record.time, absl::UTCTimeZone())},
  };
  return j.dump();
}

absl::StatusOr<ProgressRecord> ProgressFromJson(absl::string_view json) {
  if (json.size() > static_cast<size_t>(kMaxProgressFileBytes)) return Invalid("too large");
  const nlohmann::json j = nlohmann::json::parse(json.begin(), json.end(), nullptr,
                                                 /*allow_exceptions=*/false);
  if (!j.is_object()) return Invalid("not a JSON object");
  ProgressRecord r;
  auto step = j.find("step");
  if (step == j.end() || !step->is_number_integer() ||
      (step->is_number_unsigned() &&
       step->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return Invalid("step is not an integer");
  }
  r.step = step->get<int64_t>();
  auto metrics = j.find("metrics");
  if (metrics == j.end() || !metrics->is_object()) return Invalid("metrics is not an object");
  if (metrics->size() > static_cast<size_t>(kMaxProgressMetrics)) {
    return Invalid(absl::StrCat("more than ", kMaxProgressMetrics, " metrics"));
  }
  for (const auto& [name, value] : metrics->items()) {
    double v = 0;
    if (name.empty() || name.size() > kMaxMetricName || !ValueFromJson(value, &v)) {
      return Invalid(absl::StrCat("metric \"", name.substr(0, kMaxMetricName), "\" is invalid"));
    }
    r.metrics.emplace(name, v);
  }
  auto rate = j.find("steps_per_second");
  if (rate == j.end() || !rate->is_number() || !std::isfinite(rate->get<double>()) ||
      rate->get<double>() < 0) {
    return Invalid("steps_per_second is not a number >= 0");
  }
  r.steps_per_second = rate->get<double>();
  auto time = j.find("time");
  std::string err;
  if (time == j.end() || !time->is_string() ||
      !absl::ParseTime(absl::RFC3339_full, time->get<std::string>(), &r.time, &err) ||
      r.time == absl::InfinitePast() || r.time == absl::InfiniteFuture()) {
    return Invalid("time is not an RFC 3339 time");
  }
  return r;
}

absl::Status WriteProgressFile(const std::string& replica_files, const ProgressRecord& record) {
  return WriteFileAtomic(ReplicaFile(replica_files, kProgressFileName), ProgressToJson(record),
                         Durability::kCrashSafe);
}

absl::StatusOr<ProgressRecord> ReadProgressFile(const std::string& replica_files) {
  absl::StatusOr<std::string> text = ReadBounded(ReplicaFile(replica_files, kProgressFileName));
  if (!text.ok()) return text.status();
  return ProgressFromJson(*text);
}

}  // namespace coach::backend::local
