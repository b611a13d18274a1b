#include "common/metrics/metric_line.h"

#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coach::metrics {
namespace {

constexpr absl::string_view kPrefix = "coach-metric";

bool ValidKey(absl::string_view key) {
  if (key.empty() || key.size() > 250 || key.front() == '/') return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != '/' && c != ':') {
      return false;
    }
  }
  for (absl::string_view seg : absl::StrSplit(key, '/')) {
    if (seg.empty() || seg == "." || seg == "..") return false;
  }
  return true;
}

bool ParseValue(absl::string_view text, double* out) {
  std::string lower = absl::AsciiStrToLower(text);
  if (lower == "nan" || lower == "+nan" || lower == "-nan") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (lower == "inf" || lower == "+inf" || lower == "infinity") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (lower == "-inf" || lower == "-infinity") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  return absl::SimpleAtod(text, out) && std::isfinite(*out);
}

}  // namespace

absl::StatusOr<std::optional<MetricLine>> ParseMetricLine(absl::string_view line) {
  absl::ConsumeSuffix(&line, "\n");
  absl::ConsumeSuffix(&line, "\r");
  if (!absl::ConsumePrefix(&line, kPrefix)) return std::nullopt;
  if (line.empty() || (line.front() != ' ' && line.front() != '\t')) return std::nullopt;
  MetricLine m;
  bool have_name = false, have_value = false;
  std::set<std::string> seen;
  for (absl::string_view field : absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    const size_t eq = field.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("coach-metric: \"", field, "\" is not key=value"));
    }
    const absl::string_view key = field.substr(0, eq);
    const absl::string_view value = field.substr(eq + 1);
    if (!seen.insert(std::string(key)).second) {
      return absl::InvalidArgumentError(absl::StrCat("coach-metric: ", key, " given twice"));
    }
    if (key == "name") {
      if (!ValidKey(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("coach-metric: name \"", value, "\" is not a valid MLflow metric key"));
      }
      m.name = std::string(value);
      have_name = true;
    } else if (key == "value") {
      if (!ParseValue(value, &m.value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("coach-metric: value \"", value, "\" is not a number"));
      }
      have_value = true;
    } else if (key == "step") {
      if (!absl::SimpleAtoi(value, &m.step)) {
        return absl::InvalidArgumentError(
            absl::StrCat("coach-metric: step \"", value, "\" is not an integer"));
      }
    } else if (key == "timestamp") {
      int64_t ts = 0;
      if (!absl::SimpleAtoi(value, &ts) || ts < 0) {
        return absl::InvalidArgumentError(absl::StrCat("coach-metric: timestamp \"", value,
                                                       "\" is not milliseconds since the epoch"));
      }
      m.timestamp_ms = ts;
    }
  }
  if (!have_name) return absl::InvalidArgumentError("coach-metric: name= is required");
  if (!have_value) return absl::InvalidArgumentError("coach-metric: value= is required");
  return std::optional<MetricLine>(std::move(m));
}

}  // namespace coach::metrics
