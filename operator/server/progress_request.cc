#include "operator/server/progress_request.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/field_error.h"

namespace coach::server {
namespace {

using api::v1::FieldError;

bool IsLabel(const std::string& s, size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}

bool IsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!IsLabel(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start), 63)) {
      return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

bool IsMetricName(const std::string& name) {
  if (name.empty() || name.size() > kMaxMetricNameLength) return false;
  for (char c : name) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

// What a message may quote of a name the caller chose: printable, short.
std::string Quoted(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 64)) out += (c < ' ' || c > '~') ? '?' : c;
  if (name.size() > 64) out += "...";
  return out;
}

}  // namespace

absl::Status ValidateReportProgressRequest(const api::v1::ReportProgressRequest& request) {
  std::vector<FieldError> errors;
  if (request.namespace_().empty()) {
    errors.push_back({"namespace", "required"});
  } else if (!IsLabel(request.namespace_(), 63)) {
    errors.push_back({"namespace", "must be a namespace name (RFC 1123 label)"});
  }
  if (request.pod().empty()) {
    errors.push_back({"pod", "required"});
  } else if (!IsSubdomain(request.pod())) {
    errors.push_back({"pod", "must be a pod name (RFC 1123 subdomain, at most 253 characters)"});
  }
  if (request.step() < 0) {
    errors.push_back({"step", absl::StrCat("must be >= 0, got ", request.step())});
  }
  if (request.has_first_step() &&
      (request.first_step() < 0 || request.first_step() > request.step())) {
    errors.push_back({"first_step", absl::StrCat("must be in 0..step (", request.step(), "), got ",
                                                 request.first_step())});
  }
  if (!std::isfinite(request.steps_per_second()) || request.steps_per_second() < 0) {
    errors.push_back({"steps_per_second",
                      absl::StrCat("must be finite and >= 0, got ", request.steps_per_second())});
  }
  if (request.metrics_size() > static_cast<int>(kMaxReportMetrics)) {
    errors.push_back({"metrics", absl::StrCat("at most ", kMaxReportMetrics, " metrics, got ",
                                              request.metrics_size())});
  } else {
    // Sorted, so that the message is the same for the same request (a map has no order).
    const std::map<std::string, double> metrics(request.metrics().begin(), request.metrics().end());
    for (const auto& [name, value] : metrics) {
      const std::string field = absl::StrCat("metrics[\"", Quoted(name), "\"]");
      if (!IsMetricName(name)) {
        errors.push_back({field, absl::StrCat("name must be 1 to ", kMaxMetricNameLength,
                                              " printable characters without spaces")});
      }
      if (!std::isfinite(value)) {
        errors.push_back({field, absl::StrCat("value must be finite, got ", value)});
      }
    }
  }
  if (request.has_launch()) {
    const api::v1::LaunchState& launch = request.launch();
    if (launch.attempt() < 0 || launch.attempt() > kMaxLaunchAttempt) {
      errors.push_back({"launch.attempt", absl::StrCat("must be 0..", kMaxLaunchAttempt, ", got ",
                                                       launch.attempt())});
    }
    if (launch.phase() != api::v1::LaunchState::RUNNING &&
        launch.phase() != api::v1::LaunchState::FAILED &&
        launch.phase() != api::v1::LaunchState::STOPPED) {
      errors.push_back({"launch.phase", absl::StrCat("must be RUNNING, FAILED or STOPPED, got ",
                                                     static_cast<int>(launch.phase()))});
    }
    const bool failed = launch.phase() == api::v1::LaunchState::FAILED;
    if (failed && (launch.exit_code() < 1 || launch.exit_code() > 255)) {
      errors.push_back({"launch.exit_code",
                        absl::StrCat("must be 1..255 when FAILED, got ", launch.exit_code())});
    } else if (!failed && launch.exit_code() != 0) {
      errors.push_back(
          {"launch.exit_code", absl::StrCat("must be 0 unless FAILED, got ", launch.exit_code())});
    }
  }
  return api::v1::FieldErrorsToStatus(errors);
}

backend::ProgressReport ToProgressReport(const api::v1::ReportProgressRequest& request) {
  backend::ProgressReport report;
  report.step = request.step();
  report.metrics.insert(request.metrics().begin(), request.metrics().end());
  report.steps_per_second = request.steps_per_second();
  report.heartbeat = request.heartbeat();
  if (request.has_first_step()) report.first_step = request.first_step();
  if (request.has_launch()) {
    using Phase = model::ObservedPod::Launch::Phase;
    const api::v1::LaunchState& launch = request.launch();
    report.launch = model::ObservedPod::Launch{
        launch.attempt(),
        launch.phase() == api::v1::LaunchState::FAILED    ? Phase::kFailed
        : launch.phase() == api::v1::LaunchState::STOPPED ? Phase::kStopped
                                                          : Phase::kRunning,
        launch.exit_code()};
  }
  return report;
}

}  // namespace coach::server
