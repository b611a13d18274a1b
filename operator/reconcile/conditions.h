#pragma once

// The job condition machine, as upstream's UpdateJobConditions (pkg/util/status.go):
//  - Failed is final: once a job has Failed=True nothing changes;
//  - setting a condition with the same status and reason as the current one is a no-op
//    (lastUpdateTime does not churn);
//  - lastTransitionTime changes only when the status flips;
//  - Running and Restarting replace each other;
//  - Succeeded or Failed turn Running to False. (Upstream flips only the status and keeps
//    the old times; here Running's lastTransitionTime and lastUpdateTime become the
//    moment it flipped, as Kubernetes' condition conventions ask.)
// The Mark* helpers are the transitions the reconciler makes; each names the condition it
// sets and what else it touches. `kind` is the Kubernetes kind ("PyTorchJob"): a stored
// reason is "<kind><reason>". Condition types, statuses and reasons are spelled in
// api/v1/job_conditions.h.

#include <string_view>

#include "absl/time/time.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile {

// Sets the condition `type` to `cond_status` with reason "<kind><reason>", following the
// rules above. `reason` is the short reason ("Running").
void UpdateCondition(model::JobStatus& status, std::string_view kind, std::string_view type,
                     std::string_view cond_status, std::string_view reason,
                     std::string_view message, absl::Time now);

// Created=True.
void MarkCreated(model::JobStatus& status, std::string_view kind, std::string_view message,
                 absl::Time now);
// Running=True; a Restarting condition goes.
void MarkRunning(model::JobStatus& status, std::string_view kind, std::string_view message,
                 absl::Time now);
// Restarting=True; a Running condition goes.
void MarkRestarting(model::JobStatus& status, std::string_view kind, std::string_view message,
                    absl::Time now);
// Succeeded=True, Running turns False, completionTime is set unless it already is.
void MarkSucceeded(model::JobStatus& status, std::string_view kind, std::string_view message,
                   absl::Time now);
// Failed=True with `reason` (api::v1::kJobFailedReason, or kJobFailedValidationReason for
// a job that cannot run as written), Running turns False, completionTime is set unless it
// already is.
void MarkFailed(model::JobStatus& status, std::string_view kind, std::string_view reason,
                std::string_view message, absl::Time now);
// Running=False (reason Suspended) when it was True, and Suspended=True unless it already
// is. Returns true when the job was not suspended before (the caller reports it once).
bool MarkSuspended(model::JobStatus& status, std::string_view kind, std::string_view message,
                   absl::Time now);
// Suspended=False (reason Resumed) and startTime = now: a resumed job's activeDeadlineSeconds
// counts from its resumption, as upstream.
void MarkResumed(model::JobStatus& status, std::string_view kind, std::string_view message,
                 absl::Time now);

// True when a condition of `type` has status "True".
bool HasTrueCondition(const model::JobStatus& status, std::string_view type);
// Succeeded or Failed.
bool IsFinished(const model::JobStatus& status);

google::protobuf::Timestamp ToTimestamp(absl::Time t);
absl::Time FromTimestamp(const google::protobuf::Timestamp& ts);

}  // namespace coach::reconcile
