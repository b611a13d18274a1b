#pragma once

// Reading a TrainingJob's status the way kubeflow.org/v1 defines it: a condition counts
// only when its status is "True".

#include <string>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::sdk {

// Condition types: api/v1/job_conditions.h's words, repeated here because an installed
// SDK does not ship that header (job_status.cc checks that they agree).
inline constexpr char kCreated[] = "Created";
inline constexpr char kRunning[] = "Running";
inline constexpr char kRestarting[] = "Restarting";
inline constexpr char kSucceeded[] = "Succeeded";
inline constexpr char kSuspended[] = "Suspended";
inline constexpr char kFailed[] = "Failed";
// coach's: Kueue holds the job until its queue has quota (the message says which queue and why).
inline constexpr char kQueued[] = "Queued";

// The job's conditions in the order the server wrote them.
std::vector<api::v1::JobCondition> GetJobConditions(const api::v1::TrainingJob& job);

// True when the job has condition `type` with status "True".
bool HasTrueCondition(const api::v1::TrainingJob& job, const std::string& type);

bool IsJobCreated(const api::v1::TrainingJob& job);
bool IsJobRunning(const api::v1::TrainingJob& job);
bool IsJobSucceeded(const api::v1::TrainingJob& job);
bool IsJobFailed(const api::v1::TrainingJob& job);
bool IsJobSuspended(const api::v1::TrainingJob& job);
// Succeeded or Failed.
bool IsJobFinished(const api::v1::TrainingJob& job);

// The type of the last condition whose status is "True" ("" when none): the job's state
// as `coach list` shows it.
std::string JobState(const api::v1::TrainingJob& job);

// The message of condition `type` ("" when the job has none).
std::string ConditionMessage(const api::v1::TrainingJob& job, const std::string& type);

}  // namespace coach::sdk
