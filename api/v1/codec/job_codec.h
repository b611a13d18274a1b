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
// timestamps are written in UTC (RFC 3339). In coach's own status.coach, zero counts, step and
// stepsPerSecond are left out too, and numbers are doubles (a metric of 1 is written 1.0).
//
// status.coach (CoachJobStatus) is {attempt, restarts, disruptions, inPlaceRestarts,
// restartsByType: {Worker: 1}, attemptRunningTime, restartTime, progress: {step,
// metrics: {loss: 0.25}, stepsPerSecond, lastProgressTime}, attempts: [{attempt, startTime,
// runningTime, endTime, reason, message, replica, exitCode, signal, nodes: {worker-0: node-a},
// lastStep, counted}], elastic: {minWorkers, maxWorkers, workers, changes: [{time, workers,
// step, why}]}};
// counts and step are >= 0, metrics at most kMaxProgressMetrics with names of 1 to
// kMaxMetricNameLength characters, restartsByType at most kMaxRestartsByType, attempts at most
// kMaxAttempts with at most kMaxAttemptNodes nodes each, elastic.changes at most
// kMaxWorkerCountChanges with a why of at most kMaxWorkerCountWhyLength characters
// (api/v1/coach_status.h). elastic.workers and each change's workers are written even when 0.

// The decoder (job_decoder.h) and the encoder (job_encoder.h) are separate libraries;
// this header names both for callers that need either direction.

#include "absl/status/statusor.h"
#include "api/v1/codec/job_decoder.h"  // IWYU pragma: export
#include "api/v1/codec/job_encoder.h"  // IWYU pragma: export
#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec {

// The job `job` stands for, read exactly as its manifest is read: DecodeJob(EncodeJob(job)).
// This is how a job that arrives as a message (the API's CreateJob with a TrainingJob, a record
// read back from a store) is held to every rule a manifest is held to: the same decoder, the
// same limits, the same messages (a manifest's `template` with `"ports": "x"` and a job's
// template_json with it get the same error). The result is what decoding the manifest gives:
// free-form JSON fields normalised, replica-type keys in CamelCase.
// Errors: InvalidArgument listing every problem of both steps, one per line.
absl::StatusOr<TrainingJob> RecodeJob(const TrainingJob& job);

}  // namespace coach::api::v1::codec
