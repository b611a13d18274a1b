#pragma once

// Reading job manifests for the CLI: from a file or standard input ("-"), parsed,
// defaulted and validated exactly as the operator does on create.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/training_job.pb.h"

namespace coach::cli {

// The largest manifest read: a few times what Kubernetes stores of one object (1.5 MiB), so that
// `-f /dev/zero` or a wrong file ends with an error instead of reading without end.
inline constexpr size_t kMaxManifestBytes = 8 << 20;

// Reads `path` ("-" for stdin). NotFound / PermissionDenied name the path; InvalidArgument for
// a directory or more than kMaxManifestBytes.
absl::StatusOr<std::string> ReadInput(const std::string& path);

// Parses every job in `text`, applies `namespace_override` (empty: "default") to jobs
// that name no namespace (InvalidArgument when the override is given and a job names a
// different one, as kubectl refuses), defaults and validates them. InvalidArgument lists every
// error, one per line, with field paths.
absl::StatusOr<std::vector<api::v1::TrainingJob>> LoadJobs(const std::string& text,
                                                           const std::string& namespace_override);

}  // namespace coach::cli
