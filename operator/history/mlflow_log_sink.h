#pragma once

// How the history (log_keeper.h) reaches a job's MLflow run, which the tracker
// (operator/tracking) owns, and how a kept log is named in both places.

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "operator/model/reconcile_types.h"

namespace coach::history {

// "attempt-<n>/<replica>": how a kept log is named in listings (JobHistory.logs), in the store
// and in MLflow artifacts (logs/attempt-<n>/<replica>.log).
inline std::string KeptLogName(int attempt, const std::string& replica) {
  return absl::StrCat("attempt-", attempt, "/", replica);
}

class MlflowLogSink {
 public:
  virtual ~MlflowLogSink() = default;
  // Whether the job has (or will have) an MLflow run.
  virtual bool Tracks(const model::Job& job) = 0;
  // Queues the logs as artifacts logs/attempt-<attempt>/<replica>.log of the job's run. Returns
  // promptly.
  virtual void KeepLogs(const model::Job& job, int attempt,
                        std::map<std::string, std::string> logs) = 0;
  // A kept artifact. NotFound when the run has none (or the job has no run).
  virtual absl::StatusOr<std::string> ReadLog(const model::Job& job, int attempt,
                                              const std::string& replica) = 0;
};

}  // namespace coach::history
