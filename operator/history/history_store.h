#pragma once

// HistoryStore: what coach keeps of a job in a bucket (integrations/s3's ObjectStore), so that it
// outlives the job's pods and the job itself (docs/history.md):
//   <prefix>logs/<ns>/<name>/<uid>/attempt-<n>/<replica>.log   each attempt's log of each replica
//   <prefix>jobs/<ns>/<name>/<uid>.json                        a deleted job's record (JobHistory
//                                                              as protobuf JSON: its last status,
//                                                              the attempt timeline included)
// A record's object time is its deletion time: the retention sweep and the newest-first listing
// read it from the listing, without opening each record.
//
// Names are checked before any key is made (InvalidArgument naming the field): namespaces and
// names are Kubernetes names, uids and replicas [A-Za-z0-9._-]. Errors otherwise are the
// ObjectStore's (object_store.h). Thread-safe when the ObjectStore is.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/training_service.pb.h"
#include "integrations/s3/object_store.h"
#include "operator/history/history_record.h"
#include "operator/history/mlflow_log_sink.h"

namespace coach::history {

// The job a history belongs to; uid tells apart jobs that reused a name.
struct JobRef {
  std::string namespace_;
  std::string name;
  std::string uid;
};

class HistoryStore {
 public:
  // `store` is not owned and must outlive this. `prefix` is "" or ends with '/' (checked by
  // ValidatePrefix).
  HistoryStore(s3::ObjectStore* store, std::string prefix)
      : store_(store), prefix_(std::move(prefix)) {}

  static absl::Status ValidatePrefix(const std::string& prefix);

  absl::Status PutLog(const JobRef& job, int attempt, const std::string& replica,
                      const std::string& text);
  // NotFound when that attempt's log of that replica is not kept; ResourceExhausted when it is
  // larger than max_bytes.
  absl::StatusOr<std::string> GetLog(const JobRef& job, int attempt, const std::string& replica,
                                     size_t max_bytes);
  // The kept logs of the job, "attempt-<n>/<replica>" in key order; at most max.
  absl::StatusOr<std::vector<std::string>> ListLogs(const JobRef& job, int max);
  // The replicas whose log of `attempt` is kept, in order.
  absl::StatusOr<std::vector<std::string>> ReplicasOf(const JobRef& job, int attempt, int max);

  // Writes a deleted job's record (record.job's metadata names it).
  absl::Status PutRecord(const api::v1::JobHistory& record);
  // The records under `ns` (every namespace when empty) and, when set, of jobs named `name`:
  // newest deletion first, at most `max` (of the first kMaxListedRecords keys of the listing).
  // `truncated` is set when more exist.
  absl::StatusOr<std::vector<api::v1::JobHistory>> ListRecords(const std::string& ns,
                                                               const std::string& name, int max,
                                                               bool* truncated);
  // One job's record. NotFound when none is kept.
  absl::StatusOr<api::v1::JobHistory> GetRecord(const JobRef& job);

  // Deletes the records (and their jobs' logs) older than `retention` at `now`; at most
  // kMaxListedRecords records per call. Returns how many were deleted.
  absl::StatusOr<int> Sweep(absl::Time now, absl::Duration retention);

  // Bounds of one listing or sweep.
  static constexpr int kMaxListedRecords = 5000;

 private:
  absl::StatusOr<std::string> JobLogsPrefix(const JobRef& job) const;
  absl::StatusOr<std::string> RecordKey(const JobRef& job) const;

  s3::ObjectStore* const store_;
  const std::string prefix_;
};

}  // namespace coach::history
