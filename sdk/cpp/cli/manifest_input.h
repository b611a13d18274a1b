#pragma once

// Reading job manifests for the CLI: from a file or standard input ("-"), parsed,
// defaulted and validated exactly as the operator does on create.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/training_job.pb.h"

namespace coach::cli {

// Reads `path` ("-" for stdin). NotFound / PermissionDenied name the path.
absl::StatusOr<std::string> ReadInput(const std::string& path);

// Parses every job in `text`, applies `namespace_override` (empty: "default") to jobs
// that name no namespace (InvalidArgument when the override is given and a job names a
// different one, as kubectl refuses), defaults and validates them. InvalidArgument lists every
// error, one per line, with field paths.
absl::StatusOr<std::vector<api::v1::TrainingJob>> LoadJobs(const std::string& text,
                                                           const std::string& namespace_override);

}  // namespace coach::cli
