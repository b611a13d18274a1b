#pragma once

// A deleted job's record (api::v1::JobHistory) as both places that keep it write it: the history
// store (jobs/<ns>/<name>/<uid>.json) and the job's MLflow run (coach/history.json); and the checks
// of the names a record is found by. Pure functions.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/training_service.pb.h"
#include "operator/model/reconcile_types.h"

namespace coach::history {

// A record is one job's spec and status: bounded by what the API server takes.
inline constexpr size_t kMaxRecordBytes = 3 << 20;

// The record of `job` deleted at `now` (its logs not listed yet).
api::v1::JobHistory NewRecord(const model::Job& job, absl::Time now);
// "ttl" when the job's ttlSecondsAfterFinished has run out at `now`, else "deleted".
std::string DeletedBy(const model::Job& job, absl::Time now);

// Protobuf JSON; ResourceExhausted past kMaxRecordBytes.
absl::StatusOr<std::string> RecordJson(const api::v1::JobHistory& record);
// DataLoss (naming `where`) for what is not a record; unknown fields (a newer operator's) are
// ignored.
absl::StatusOr<api::v1::JobHistory> ParseRecordJson(const std::string& where,
                                                    const std::string& json);

// InvalidArgument naming `field` unless `value` is a Kubernetes name (namespaces, jobs): 1 to 253
// lowercase letters, digits, '-' or '.', not "." or "..".
absl::Status CheckKubeName(const char* field, const std::string& value);
// The same for uids and replica names: letters, digits, '-', '.' or '_'.
absl::Status CheckSegment(const char* field, const std::string& value);

}  // namespace coach::history
