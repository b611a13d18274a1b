#pragma once

// The rules a ReportProgressRequest must satisfy before anything reads it, and the report it
// carries. Pure.
//
//   namespace          required; a namespace name (RFC 1123 label)
//   pod                required; a pod name (RFC 1123 subdomain, at most 253 characters)
//   step               >= 0
//   metrics            at most kMaxReportMetrics; each name 1..kMaxMetricNameLength printable
//                      characters without spaces; each value finite
//   steps_per_second   finite, >= 0
//   launch             (when set) attempt 0..kMaxLaunchAttempt; phase RUNNING, FAILED or
//                      STOPPED; exit_code 1..255 when FAILED, else 0
//
// A report that breaks one is refused whole: InvalidArgument listing every offending field as
// "<field>: <problem>" (a metric as metrics["<name>"], its name cut at 64 characters).

#include <cstddef>

#include "absl/status/status.h"
#include "api/v1/training_service.pb.h"
#include "operator/backend/progress_receiver.h"

namespace coach::server {

inline constexpr size_t kMaxReportMetrics = 64;
inline constexpr size_t kMaxMetricNameLength = 250;
inline constexpr int kMaxLaunchAttempt = 1000000;

absl::Status ValidateReportProgressRequest(const api::v1::ReportProgressRequest& request);

// The report of a valid request.
backend::ProgressReport ToProgressReport(const api::v1::ReportProgressRequest& request);

}  // namespace coach::server
