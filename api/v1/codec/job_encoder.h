#pragma once

// coach::api::v1::TrainingJob -> kubeflow.org/v1 manifests (the codec's contract is in
// job_codec.h: round trip and normalisation).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/field_error.h"
#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec {

// The manifest of `job` (apiVersion, kind, metadata, spec, status when set), and every problem
// that kept a part of the job out of it; empty: success. Every field set in the job is written,
// spec fields of another kind too (DecodeJob refuses those, as in a manifest), except a NaN or
// infinite number in status.coach.progress (a metric, stepsPerSecond): JSON has no such number,
// so it is left out without a problem (a diverged loss must not make a job unwritable). The
// free-form JSON fields (ObjectMeta.extra_json, ReplicaSpec.template_json,
// ElasticPolicy.metrics_json, ReplicaStatus.label_selector_json) are read as manifest text is
// (ParseYamlDocuments, with the depth the field has in a manifest counting toward kMaxYamlDepth)
// and must be JSON; extra_json must be an object that holds none of the fields ObjectMeta models. A
// field that fails is left out, with a problem at its manifest path
// ("spec.pytorchReplicaSpecs.Worker.template", "metadata.extra_json") whose message names the proto
// field. Whether the values are of the type the manifest wants is DecodeJob's to say.
std::vector<FieldError> EncodeJob(const TrainingJob& job, nlohmann::json* manifest);

// EncodeJob's manifest, or InvalidArgument listing every problem (as FieldErrorsToStatus
// writes them). For jobs that may not have come through the decoder: what a client sent, a
// record read back from a store.
absl::StatusOr<nlohmann::json> JobToJsonChecked(const TrainingJob& job);

// EncodeJob's manifest, whatever the problems: a free-form field that cannot be read is left
// out. Never throws. For jobs known to be well formed (decoded, or admitted); others go through
// JobToJsonChecked.
nlohmann::json JobToJson(const TrainingJob& job);

// One job as a YAML document (no leading "---").
std::string JobToYamlString(const TrainingJob& job);
// Every job as its own YAML document, each preceded by "---".
std::string JobsToYaml(const std::vector<TrainingJob>& jobs);
// One job: its manifest object; otherwise a `kind: List` (apiVersion v1) of them;
// pretty-printed with two-space indentation and a trailing newline.
std::string JobsToJson(const std::vector<TrainingJob>& jobs);

}  // namespace coach::api::v1::codec
