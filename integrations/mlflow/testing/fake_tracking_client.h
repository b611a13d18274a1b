#pragma once

// In-memory TrackingClient with MLflow's semantics (write-once params, experiment names reserved,
// metrics append, log-batch limits) plus injectable errors, latency and an "outage" switch, and
// recorded calls. Thread-safe. Kept honest by tracking_client_contract_test.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "integrations/mlflow/tracking_client.h"

namespace coach::mlflow::testing {

class FakeTrackingClient : public TrackingClient {
 public:
  enum class Method {
    kGetOrCreateExperiment,
    kGetExperimentByName,
    kCreateRun,
    kGetRun,
    kUpdateRun,
    kSearchRuns,
    kListExperimentIds,
    kLogBatch,
    kGetMetricHistory,
    kUploadArtifact,
    kDownloadArtifact,
    kListArtifacts,
  };

  // The next `times` calls of `method` fail with `status` (after any latency), doing nothing.
  void InjectError(Method method, absl::Status status, int times = 1);
  // While down, every call fails with Unavailable ("connection refused").
  void SetDown(bool down);
  // Every call sleeps this long first (a slow server).
  void SetLatency(absl::Duration latency);

  int Calls(Method method) const;
  // Metric points the log-batch calls carried, in order of arrival (successful calls only).
  int64_t MetricsReceived() const;

  absl::StatusOr<std::string> GetOrCreateExperiment(absl::string_view name) override;
  absl::StatusOr<Experiment> GetExperimentByName(absl::string_view name) override;
  absl::StatusOr<RunInfo> CreateRun(const CreateRunRequest& request) override;
  absl::StatusOr<Run> GetRun(absl::string_view run_id) override;
  absl::StatusOr<RunInfo> UpdateRun(const UpdateRunRequest& request) override;
  absl::StatusOr<std::vector<RunInfo>> SearchRuns(const SearchRunsRequest& request) override;
  absl::StatusOr<std::vector<std::string>> ListExperimentIds(int max_results) override;
  absl::Status LogBatch(absl::string_view run_id, const std::vector<Metric>& metrics,
                        const std::vector<Param>& params, const std::vector<Tag>& tags) override;
  absl::StatusOr<std::vector<Metric>> GetMetricHistory(absl::string_view run_id,
                                                       absl::string_view key) override;
  absl::Status UploadArtifact(absl::string_view run_id, absl::string_view path,
                              absl::string_view content) override;
  absl::StatusOr<std::string> DownloadArtifact(absl::string_view run_id,
                                               absl::string_view path) override;
  absl::StatusOr<std::vector<FileInfo>> ListArtifacts(absl::string_view run_id,
                                                      absl::string_view path,
                                                      int max_results) override;

 private:
  struct StoredRun {
    Run run;
    std::map<std::string, std::vector<Metric>> history;
    std::map<std::string, std::string> artifacts;
  };
  // Records the call, applies latency/outage/injected errors. Called without mu_ held.
  absl::Status Enter(Method method);

  mutable absl::Mutex mu_;
  std::map<Method, int> calls_ ABSL_GUARDED_BY(mu_);
  std::map<Method, std::deque<absl::Status>> injected_ ABSL_GUARDED_BY(mu_);
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration latency_ ABSL_GUARDED_BY(mu_);
  std::vector<Experiment> experiments_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, StoredRun> runs_ ABSL_GUARDED_BY(mu_);
  int64_t next_run_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t metrics_received_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coach::mlflow::testing
