#pragma once

// Bounds on coach's part of a job's status (status.coach, CoachJobStatus). The decoder
// (job_decoder.h) and the CRD's schema (tools/gen_crds.py) both refuse a status beyond them, so
// whatever fills the status keeps inside them: on Kubernetes the API server would refuse the
// status write, and a job held with such a status anywhere could not be read back.

#include <cstddef>

namespace coach::api::v1 {

// Metrics in status.coach.progress.metrics. The status is written every few seconds while a
// job reports progress; this keeps each write small.
inline constexpr int kMaxProgressMetrics = 64;
// A metric name's length in characters (Unicode code points, as CEL's size() counts them in
// the CRD's rule): MLflow's limit for a metric key, so that every name the status holds can be
// logged there too.
inline constexpr size_t kMaxMetricNameLength = 250;
// Entries of status.coach.restartsByType: one per replica type, and no kind has more than the
// CRD lets a job have.
inline constexpr int kMaxRestartsByType = 16;
// Entries of status.coach.attempts: the first attempt and the latest ones. Every restart adds
// one; the oldest after the first goes.
inline constexpr int kMaxAttempts = 20;
// Replicas whose node an attempt keeps (JobAttempt.nodes): a job of thousands of replicas must
// keep its status well under the API server's object limit.
inline constexpr int kMaxAttemptNodes = 64;
// Bytes of an attempt's message and of a node or replica name it keeps.
inline constexpr size_t kMaxAttemptMessageLength = 1024;
inline constexpr size_t kMaxAttemptNameLength = 253;
// Entries of status.coach.elastic.changes: the first and the latest ones, as for attempts.
inline constexpr int kMaxWorkerCountChanges = 20;
// Characters of a change's `why`.
inline constexpr size_t kMaxWorkerCountWhyLength = 512;

}  // namespace coach::api::v1
