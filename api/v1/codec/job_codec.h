#pragma once

// kubeflow.org/v1 manifests (PyTorchJob, TFJob, XGBoostJob, MPIJob, PaddleJob, JAXJob) <->
// coach::api::v1::TrainingJob.
//
// Decoding is strict, like `kubectl apply --validate=strict`: apiVersion must be
// kubeflow.org/v1 and kind one of the six; unknown fields in spec, runPolicy,
// schedulingPolicy, elasticPolicy, replica specs and status are errors, and so are fields
// of another kind (`slotsPerWorker` on a PyTorchJob). Replica-type keys are normalised to
// CamelCase (`worker` -> `Worker`). Metadata fields coach does not model are kept in
// ObjectMeta.extra_json and the pod template verbatim in ReplicaSpec.template_json.
// A field whose value is null counts as absent, as in Kubernetes. Quantities in
// schedulingPolicy.minResources may be numbers and are kept as strings ("4"), as the
// API server's resource.Quantity does.
//
// Every problem of a document is reported at once: one InvalidArgument whose message has
// one line per problem, `path: message`, e.g.
//   spec.runPolicy.backoffLimit: must be an integer, got string "x"
//
// Round trip: for a valid manifest without nulls, JobToJson(JobFromJson(m)) == m, status
// included, with two normalisations that upstream's Go types also make: zero counts in
// status.replicaStatuses and empty strings in optional string fields are left out, and
// timestamps are written in UTC (RFC 3339).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/v1/field_error.h"
#include "api/v1/training_job.pb.h"
#include <nlohmann/json.hpp>

namespace coach::api::v1::codec {

// Decodes one manifest object. Errors: InvalidArgument listing every problem.
absl::StatusOr<TrainingJob> JobFromJson(const nlohmann::json& manifest);

// As JobFromJson, but returns the problems instead of a status; `job` holds whatever
// could be decoded. Empty result: success.
std::vector<FieldError> DecodeJob(const nlohmann::json& manifest, TrainingJob* job);

// The manifest of `job` (apiVersion, kind, metadata, spec, status when set). Writes only
// the fields of the job's kind.
nlohmann::json JobToJson(const TrainingJob& job);

// Every job in `text`: YAML or JSON, one or several documents ("---"), a document may
// also be a `kind: List` whose `items` are jobs. Empty documents are skipped.
// Errors: InvalidArgument for YAML syntax (with line and column), no document at all,
// and every decoding problem; with more than one document each line starts with
// "document N: " (1-based) and List items have paths "items[i].<path>".
absl::StatusOr<std::vector<TrainingJob>> ParseManifests(const std::string& text);

// One job as a YAML document (no leading "---").
std::string JobToYamlString(const TrainingJob& job);
// Every job as its own YAML document, each preceded by "---".
std::string JobsToYaml(const std::vector<TrainingJob>& jobs);
// One job: its manifest object; otherwise a `kind: List` (apiVersion v1) of them;
// pretty-printed with two-space indentation and a trailing newline.
std::string JobsToJson(const std::vector<TrainingJob>& jobs);

}  // namespace coach::api::v1::codec
