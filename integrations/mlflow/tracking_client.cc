#include "integrations/mlflow/tracking_client.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace coach::mlflow {

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning:
      return "RUNNING";
    case RunStatus::kScheduled:
      return "SCHEDULED";
    case RunStatus::kFinished:
      return "FINISHED";
    case RunStatus::kFailed:
      return "FAILED";
    case RunStatus::kKilled:
      return "KILLED";
  }
  return "RUNNING";
}

absl::StatusOr<RunStatus> ParseRunStatus(absl::string_view name) {
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kScheduled, RunStatus::kFinished,
                      RunStatus::kFailed, RunStatus::kKilled}) {
    if (name == RunStatusName(s)) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown run status \"", name, "\""));
}

absl::StatusOr<RunInfo> TrackingClient::TerminateRun(absl::string_view run_id, RunStatus status,
                                                     int64_t end_time_ms) {
  if (status != RunStatus::kFinished && status != RunStatus::kFailed &&
      status != RunStatus::kKilled) {
    return absl::InvalidArgumentError(
        absl::StrCat("a run ends FINISHED, FAILED or KILLED, not ", RunStatusName(status)));
  }
  UpdateRunRequest request;
  request.run_id = std::string(run_id);
  request.status = status;
  request.end_time_ms = end_time_ms;
  return UpdateRun(request);
}

absl::Status TrackingClient::LogMetric(absl::string_view run_id, const Metric& metric) {
  return LogBatch(run_id, {metric}, {}, {});
}

absl::Status TrackingClient::LogParam(absl::string_view run_id, absl::string_view key,
                                      absl::string_view value) {
  return LogBatch(run_id, {}, {Param{std::string(key), std::string(value)}}, {});
}

absl::Status TrackingClient::SetTag(absl::string_view run_id, absl::string_view key,
                                    absl::string_view value) {
  return LogBatch(run_id, {}, {}, {Tag{std::string(key), std::string(value)}});
}

bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

namespace {

bool IsKeyChar(unsigned char c) {
  // The server's `^[/\w.\- :]*$` (Python's \w is Unicode-aware: let UTF-8 bytes through).
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '/' || c == '.' || c == '-' || c == ' ' || c == ':' || c >= 0x80;
}

// posixpath.normpath(p) == p, and not ".", "..", "../x" or absolute: what MLflow calls a unique
// path.
bool IsNormalisedRelativePath(absl::string_view p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  for (absl::string_view segment : absl::StrSplit(p, '/')) {
    if (segment.empty() || segment == "." || segment == "..") return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateKey(absl::string_view key) {
  if (key.size() > kMaxKeyLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " characters; MLflow allows ", kMaxKeyLength));
  }
  for (unsigned char c : key) {
    if (!IsKeyChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "key \"", key, "\": only letters, digits, '_', '-', '.', ' ', ':' and '/' are allowed"));
    }
  }
  if (!IsNormalisedRelativePath(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key \"", key, "\" is not a normalised relative path"));
  }
  return absl::OkStatus();
}

absl::Status ValidateArtifactPath(absl::string_view path) {
  if (!IsNormalisedRelativePath(path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "artifact path \"", path, "\": relative, '/'-separated, without empty, '.' or '..' parts"));
  }
  return absl::OkStatus();
}

}  // namespace coach::mlflow
