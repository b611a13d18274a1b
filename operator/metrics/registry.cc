#include "operator/metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace coach::metrics {
namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string EscapeLabelValue(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelText(const std::vector<std::string>& names, const LabelValues& values,
                      const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!out.empty()) out += ",";
    out += names[i] + "=\"" + EscapeLabelValue(i < values.size() ? values[i] : "") + "\"";
  }
  if (!extra_name.empty()) {
    if (!out.empty()) out += ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  return out.empty() ? "" : "{" + out + "}";
}

}  // namespace

Family::Family(Type type, std::string name, std::string help, std::vector<std::string> label_names,
               std::vector<double> bounds)
    : type_(type),
      name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

Family::Series& Family::SeriesLocked(const LabelValues& labels) {
  LabelValues key = labels;
  key.resize(label_names_.size());
  Series& s = series_[key];
  if (type_ == Type::kHistogram && s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  return s;
}

void Family::Add(const LabelValues& labels, double value) {
  if (type_ == Type::kCounter && value < 0) return;
  absl::MutexLock lock(&mu_);
  SeriesLocked(labels).value += value;
}

void Family::Set(const LabelValues& labels, double value) {
  absl::MutexLock lock(&mu_);
  SeriesLocked(labels).value = value;
}

void Family::Observe(const LabelValues& labels, double value) {
  absl::MutexLock lock(&mu_);
  Series& s = SeriesLocked(labels);
  s.value += value;
  ++s.count;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++s.buckets[i];
      break;
    }
  }
}

void Family::Clear() {
  absl::MutexLock lock(&mu_);
  series_.clear();
}

double Family::Value(const LabelValues& labels) const {
  absl::MutexLock lock(&mu_);
  LabelValues key = labels;
  key.resize(label_names_.size());
  auto it = series_.find(key);
  if (it == series_.end()) return 0;
  return type_ == Type::kHistogram ? static_cast<double>(it->second.count) : it->second.value;
}

void Family::Render(std::string* out) const {
  static const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  absl::MutexLock lock(&mu_);
  *out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  *out += "# TYPE " + name_ + " " + kTypeNames[static_cast<int>(type_)] + "\n";
  // A family without labels shows 0 before its first use, as client libraries do.
  if (series_.empty() && label_names_.empty()) {
    if (type_ == Type::kHistogram) {
      for (double b : bounds_) *out += name_ + "_bucket{le=\"" + FormatValue(b) + "\"} 0\n";
      *out += name_ + "_bucket{le=\"+Inf\"} 0\n" + name_ + "_sum 0\n" + name_ + "_count 0\n";
    } else {
      *out += name_ + " 0\n";
    }
    return;
  }
  for (const auto& [labels, s] : series_) {
    if (type_ != Type::kHistogram) {
      *out += name_ + LabelText(label_names_, labels) + " " + FormatValue(s.value) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += s.buckets[i];
      *out += name_ + "_bucket" + LabelText(label_names_, labels, "le", FormatValue(bounds_[i])) +
              " " + std::to_string(cumulative) + "\n";
    }
    *out += name_ + "_bucket" + LabelText(label_names_, labels, "le", "+Inf") + " " +
            std::to_string(s.count) + "\n";
    *out += name_ + "_sum" + LabelText(label_names_, labels) + " " + FormatValue(s.value) + "\n";
    *out +=
        name_ + "_count" + LabelText(label_names_, labels) + " " + std::to_string(s.count) + "\n";
  }
}

Family* Registry::Register(Family::Type type, const std::string& name, const std::string& help,
                           std::vector<std::string> label_names, std::vector<double> bounds) {
  absl::MutexLock lock(&mu_);
  for (const auto& f : families_) {
    if (f->name() == name) return f.get();
  }
  families_.push_back(std::unique_ptr<Family>(
      new Family(type, name, help, std::move(label_names), std::move(bounds))));
  return families_.back().get();
}

Family* Registry::Counter(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names) {
  return Register(Family::Type::kCounter, name, help, std::move(label_names), {});
}

Family* Registry::Gauge(const std::string& name, const std::string& help,
                        std::vector<std::string> label_names) {
  return Register(Family::Type::kGauge, name, help, std::move(label_names), {});
}

Family* Registry::Histogram(const std::string& name, const std::string& help,
                            std::vector<double> bucket_bounds,
                            std::vector<std::string> label_names) {
  return Register(Family::Type::kHistogram, name, help, std::move(label_names),
                  std::move(bucket_bounds));
}

std::string Registry::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& f : families_) f->Render(&out);
  return out;
}

std::vector<double> Registry::ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) out.push_back(v);
  return out;
}

}  // namespace coach::metrics
