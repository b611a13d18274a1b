#pragma once

// The MLflow tracking boundary: one abstract class, implemented over the REST API
// (rest_tracking_client.h) and in memory for tests (testing/fake_tracking_client.h).
// tracking_client_contract_test runs the same suite against both, so the fake cannot drift.
//
// Error codes (every method; the REST implementation maps HTTP/MLflow errors to these at its edge):
//   NotFound          404 / RESOURCE_DOES_NOT_EXIST (no such experiment, run, artifact)
//   InvalidArgument   400 / INVALID_PARAMETER_VALUE / BAD_REQUEST, and requests refused locally
//   before
//                     sending (bad key, a param key twice with different values in one call)
//   AlreadyExists     RESOURCE_ALREADY_EXISTS (experiment name taken) / 409
//   Unauthenticated   401            PermissionDenied  403
//   Unavailable       429, 5xx, connection errors: what is left after the client's own retries
//   DeadlineExceeded  the request timed out (after retries)
//   FailedPrecondition  the operation cannot work with this server/run (e.g. an artifact location
//   that
//                     the artifact proxy does not serve)
// Unavailable and DeadlineExceeded are transient (try again later); the others are not.
// Implementations are thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coach::mlflow {

enum class RunStatus { kRunning, kScheduled, kFinished, kFailed, kKilled };

// "RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED".
const char* RunStatusName(RunStatus status);
// Inverse of RunStatusName; InvalidArgument for anything else.
absl::StatusOr<RunStatus> ParseRunStatus(absl::string_view name);

struct Metric {
  std::string key;
  double value = 0;  // NaN and +-Inf are sent as MLflow expects ("NaN", "Infinity")
  int64_t timestamp_ms = 0;
  int64_t step = 0;
  bool operator==(const Metric& o) const {
    return key == o.key && (value == o.value || (value != value && o.value != o.value)) &&
           timestamp_ms == o.timestamp_ms && step == o.step;
  }
};

struct Param {
  std::string key;
  std::string value;
};

struct Tag {
  std::string key;
  std::string value;
};

struct Experiment {
  std::string experiment_id;
  std::string name;
  std::string artifact_location;
  std::string lifecycle_stage;  // "active" or "deleted"
};

struct RunInfo {
  std::string run_id;
  std::string experiment_id;
  std::string run_name;
  RunStatus status = RunStatus::kRunning;
  int64_t start_time_ms = 0;
  std::optional<int64_t> end_time_ms;
  std::string artifact_uri;
  std::string lifecycle_stage;
};

struct Run {
  RunInfo info;
  std::vector<Metric> latest_metrics;  // the latest value per key, as runs/get returns them
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> tags;
};

struct FileInfo {
  std::string path;  // from the run's artifact root: "logs/attempt-0"
  bool is_dir = false;
  int64_t file_size = 0;
};

struct CreateRunRequest {
  std::string experiment_id;
  std::string run_name;                  // empty: the server picks one
  std::optional<int64_t> start_time_ms;  // unset: now
  std::vector<Tag> tags;
};

struct UpdateRunRequest {
  std::string run_id;
  std::optional<RunStatus> status;
  std::optional<int64_t> end_time_ms;
  std::optional<std::string> run_name;
};

struct SearchRunsRequest {
  std::vector<std::string> experiment_ids;
  std::string filter;  // MLflow filter syntax, e.g. "tags.`coach.job_uid` = 'abc'"
  int max_results = 1000;
};

// Per log-batch request, as the server enforces them (mlflow/utils/validation.py).
inline constexpr int kMaxMetricsPerBatch = 1000;
inline constexpr int kMaxParamsPerBatch = 100;
inline constexpr int kMaxTagsPerBatch = 100;
inline constexpr int kMaxEntitiesPerBatch = 1000;
inline constexpr size_t kMaxBatchJsonBytes = 1000 * 1000;
inline constexpr size_t kMaxKeyLength = 250;

class TrackingClient {
 public:
  virtual ~TrackingClient() = default;

  // The experiment's id, creating it when absent. Safe when several callers race: a create that
  // loses (AlreadyExists) is followed by a get-by-name. FailedPrecondition when an experiment of
  // that name exists but is deleted (MLflow keeps the name reserved).
  virtual absl::StatusOr<std::string> GetOrCreateExperiment(absl::string_view name) = 0;

  // NotFound when no experiment (active or deleted) has that name.
  virtual absl::StatusOr<Experiment> GetExperimentByName(absl::string_view name) = 0;

  virtual absl::StatusOr<RunInfo> CreateRun(const CreateRunRequest& request) = 0;
  virtual absl::StatusOr<Run> GetRun(absl::string_view run_id) = 0;
  virtual absl::StatusOr<RunInfo> UpdateRun(const UpdateRunRequest& request) = 0;

  // Ends a run: status FINISHED, FAILED or KILLED (InvalidArgument otherwise) and its end time.
  absl::StatusOr<RunInfo> TerminateRun(absl::string_view run_id, RunStatus status,
                                       int64_t end_time_ms);

  // Runs matching the filter, newest first; follows page tokens up to max_results.
  virtual absl::StatusOr<std::vector<RunInfo>> SearchRuns(const SearchRunsRequest& request) = 0;

  // Ids of active experiments, most recently updated first; follows page tokens up to
  // max_results.
  virtual absl::StatusOr<std::vector<std::string>> ListExperimentIds(int max_results) = 0;

  // Logs any number of metrics, params and tags: split into requests within the server's limits
  // (kMax*PerBatch, kMaxBatchJsonBytes). Params are write-once: the same key with the same value
  // again is fine; a different value is InvalidArgument (from the server, or locally when one call
  // carries both), never retried. A duplicate (key, value) param within one call is sent once. Not
  // atomic across requests: on error, earlier requests may have landed (metrics append, so a retry
  // by the caller may duplicate points; params and tags are idempotent).
  virtual absl::Status LogBatch(absl::string_view run_id, const std::vector<Metric>& metrics,
                                const std::vector<Param>& params, const std::vector<Tag>& tags) = 0;

  absl::Status LogMetric(absl::string_view run_id, const Metric& metric);
  absl::Status LogParam(absl::string_view run_id, absl::string_view key, absl::string_view value);
  absl::Status SetTag(absl::string_view run_id, absl::string_view key, absl::string_view value);

  // Every point logged for one metric key.
  virtual absl::StatusOr<std::vector<Metric>> GetMetricHistory(absl::string_view run_id,
                                                               absl::string_view key) = 0;

  // Stores `content` as the run's artifact at `path` (relative, '/'-separated, no "..") through the
  // server's artifact proxy (`mlflow server --serve-artifacts`). FailedPrecondition when the run's
  // artifact location is not served by the proxy.
  virtual absl::Status UploadArtifact(absl::string_view run_id, absl::string_view path,
                                      absl::string_view content) = 0;
  // Reads an artifact back through the proxy. NotFound when absent.
  virtual absl::StatusOr<std::string> DownloadArtifact(absl::string_view run_id,
                                                       absl::string_view path) = 0;
  // What lies directly under `path` ("" the root) of the run's artifacts, in path order; at most
  // max_results. Empty when `path` does not exist.
  virtual absl::StatusOr<std::vector<FileInfo>> ListArtifacts(absl::string_view run_id,
                                                              absl::string_view path,
                                                              int max_results) = 0;
};

// True for the codes a caller should retry later (Unavailable, DeadlineExceeded).
bool IsTransient(const absl::Status& status);

// Checks a metric/param/tag key as the server would (length, characters, normalised path).
absl::Status ValidateKey(absl::string_view key);

// Checks an artifact path: relative, '/'-separated, no empty, "." or ".." segments.
absl::Status ValidateArtifactPath(absl::string_view path);

}  // namespace coach::mlflow
