#pragma once

// kubeflow.org/v1 manifests -> coach::api::v1::TrainingJob (the codec's contract is in
// job_codec.h: strictness, normalisation, how problems are reported).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/field_error.h"
#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec {

// Decodes one manifest object. Errors: InvalidArgument listing every problem.
absl::StatusOr<TrainingJob> JobFromJson(const nlohmann::json& manifest);

// As JobFromJson, but returns the problems instead of a status; `job` holds whatever
// could be decoded. Empty result: success.
std::vector<FieldError> DecodeJob(const nlohmann::json& manifest, TrainingJob* job);

// Every job in `text`: YAML or JSON, one or several documents ("---"), a document may
// also be a `kind: List` whose `items` are jobs. Empty documents are skipped.
// Errors: InvalidArgument for YAML syntax (with line and column), no document at all,
// and every decoding problem; with more than one document each line starts with
// "document N: " (1-based) and List items have paths "items[i].<path>".
absl::StatusOr<std::vector<TrainingJob>> ParseManifests(const std::string& text);

}  // namespace coach::api::v1::codec
