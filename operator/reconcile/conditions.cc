#include "operator/reconcile/conditions.h"

#include <google/protobuf/util/time_util.h>

#include <string>
#include <utility>
#include <vector>

#include "api/v1/job_conditions.h"

namespace coach::reconcile {

using api::v1::JobCondition;
using api::v1::kConditionFalse;
using api::v1::kConditionTrue;
using api::v1::kJobCreated;
using api::v1::kJobFailed;
using api::v1::kJobRestarting;
using api::v1::kJobRunning;
using api::v1::kJobSucceeded;
using api::v1::kJobSuspended;

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

absl::Time FromTimestamp(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void UpdateCondition(model::JobStatus& status, std::string_view kind, std::string_view type,
                     std::string_view cond_status, std::string_view reason,
                     std::string_view message, absl::Time now) {
  JobCondition cond;
  cond.set_type(std::string(type));
  cond.set_status(std::string(cond_status));
  std::string full_reason(kind);
  full_reason.append(reason);
  cond.set_reason(std::move(full_reason));
  cond.set_message(std::string(message));
  *cond.mutable_last_update_time() = ToTimestamp(now);
  *cond.mutable_last_transition_time() = ToTimestamp(now);

  // Failed is final (upstream's setCondition returns early on a failed job).
  if (HasTrueCondition(status, kJobFailed)) return;
  const JobCondition* current = nullptr;
  for (const JobCondition& c : status.conditions()) {
    if (c.type() == type) current = &c;
  }
  if (current != nullptr && current->status() == cond_status &&
      current->reason() == cond.reason()) {
    return;
  }
  if (current != nullptr && current->status() == cond_status) {
    *cond.mutable_last_transition_time() = current->last_transition_time();
  }
  std::vector<JobCondition> kept;
  for (const JobCondition& c : status.conditions()) {
    if (type == kJobRestarting && c.type() == kJobRunning) continue;
    if (type == kJobRunning && c.type() == kJobRestarting) continue;
    if (c.type() == type) continue;
    JobCondition copy = c;
    if ((type == kJobFailed || type == kJobSucceeded) && c.type() == kJobRunning &&
        c.status() != kConditionFalse) {
      copy.set_status(kConditionFalse);
      *copy.mutable_last_transition_time() = ToTimestamp(now);
      *copy.mutable_last_update_time() = ToTimestamp(now);
    }
    kept.push_back(std::move(copy));
  }
  kept.push_back(std::move(cond));
  status.clear_conditions();
  for (JobCondition& c : kept) *status.add_conditions() = std::move(c);
}

namespace {

void SetCompletionTimeOnce(model::JobStatus& status, absl::Time now) {
  if (!status.has_completion_time()) *status.mutable_completion_time() = ToTimestamp(now);
}

}  // namespace

void MarkCreated(model::JobStatus& status, std::string_view kind, std::string_view message,
                 absl::Time now) {
  UpdateCondition(status, kind, kJobCreated, kConditionTrue, api::v1::kJobCreatedReason, message,
                  now);
}

void MarkRunning(model::JobStatus& status, std::string_view kind, std::string_view message,
                 absl::Time now) {
  UpdateCondition(status, kind, kJobRunning, kConditionTrue, api::v1::kJobRunningReason, message,
                  now);
}

void MarkRestarting(model::JobStatus& status, std::string_view kind, std::string_view message,
                    absl::Time now) {
  UpdateCondition(status, kind, kJobRestarting, kConditionTrue, api::v1::kJobRestartingReason,
                  message, now);
}

void MarkSucceeded(model::JobStatus& status, std::string_view kind, std::string_view message,
                   absl::Time now) {
  UpdateCondition(status, kind, kJobSucceeded, kConditionTrue, api::v1::kJobSucceededReason,
                  message, now);
  SetCompletionTimeOnce(status, now);
}

void MarkFailed(model::JobStatus& status, std::string_view kind, std::string_view reason,
                std::string_view message, absl::Time now) {
  UpdateCondition(status, kind, kJobFailed, kConditionTrue, reason, message, now);
  SetCompletionTimeOnce(status, now);
}

bool MarkSuspended(model::JobStatus& status, std::string_view kind, std::string_view message,
                   absl::Time now) {
  if (HasTrueCondition(status, kJobRunning)) {
    UpdateCondition(status, kind, kJobRunning, kConditionFalse, api::v1::kJobSuspendedReason,
                    message, now);
  }
  if (HasTrueCondition(status, kJobSuspended)) return false;
  UpdateCondition(status, kind, kJobSuspended, kConditionTrue, api::v1::kJobSuspendedReason,
                  message, now);
  return true;
}

void MarkResumed(model::JobStatus& status, std::string_view kind, std::string_view message,
                 absl::Time now) {
  UpdateCondition(status, kind, kJobSuspended, kConditionFalse, api::v1::kJobResumedReason, message,
                  now);
  *status.mutable_start_time() = ToTimestamp(now);
}

bool HasTrueCondition(const model::JobStatus& status, std::string_view type) {
  for (const JobCondition& c : status.conditions()) {
    if (c.type() == type && c.status() == kConditionTrue) return true;
  }
  return false;
}

bool IsFinished(const model::JobStatus& status) {
  return HasTrueCondition(status, kJobSucceeded) || HasTrueCondition(status, kJobFailed);
}

}  // namespace coach::reconcile
