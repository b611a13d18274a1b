#pragma once

// How the history (log_keeper.h) reaches a job's MLflow run, which the tracker
// (operator/tracking) owns, and how a kept log is named in both places.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "api/v1/training_service.pb.h"
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
  // The replicas whose log of `attempt` the job's run keeps, in order.
  virtual absl::StatusOr<std::vector<std::string>> ReplicasOf(const model::Job& job,
                                                              int attempt) = 0;

  // The job (record.job()) is deleted: its run ends (KILLED, unless it has ended) and keeps the
  // record, after the job's logs, as artifact coach/history.json with tags coach.deleted=true,
  // coach.deleted_by and coach.deleted_time. `read_logs`: nobody read the job's pods' logs at
  // its deletion (kubectl deleted it): whatever they still give is read for the run. Returns
  // promptly.
  virtual void KeepRecord(api::v1::JobHistory record, bool read_logs) = 0;
  // The records kept in runs of the operator's tracking servers (the operator-wide one and those
  // jobs named since it started), as HistoryStore::ListRecords: under `ns` (every namespace when
  // empty), of jobs named `name` when set, newest deletion first, at most `max`.
  virtual absl::StatusOr<std::vector<api::v1::JobHistory>> ListDeleted(const std::string& ns,
                                                                       const std::string& name,
                                                                       int max,
                                                                       bool* truncated) = 0;
  // One deleted job's record by namespace, name and uid. NotFound when no run keeps it.
  virtual absl::StatusOr<api::v1::JobHistory> DeletedRecord(const std::string& ns,
                                                            const std::string& name,
                                                            const std::string& uid) = 0;
};

}  // namespace coach::history
