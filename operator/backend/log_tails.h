#pragma once

// Reading replicas' logs whole into memory, bounded: each replica's last `max_bytes`, where a
// failure explains itself. For what keeps logs beyond their pods (the MLflow tracker's final
// logs, the history).

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "operator/backend/backend.h"

namespace coach::backend {

// Each replica's log as backend.StreamLogs(job, options) streams it ("master-0" -> text), cut
// to its last `max_bytes` (> 0). Memory stays under 2 * max_bytes a replica while reading.
// Errors: StreamLogs's.
absl::StatusOr<std::map<std::string, std::string>> ReadLogTails(Backend& backend,
                                                                const model::Job& job,
                                                                const LogOptions& options,
                                                                int64_t max_bytes);

}  // namespace coach::backend
