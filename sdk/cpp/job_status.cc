#include "sdk/cpp/job_status.h"

namespace coach::sdk {

std::vector<api::v1::JobCondition> GetJobConditions(const api::v1::TrainingJob& job) {
  return {job.status().conditions().begin(), job.status().conditions().end()};
}

bool HasTrueCondition(const api::v1::TrainingJob& job, const std::string& type) {
  for (const api::v1::JobCondition& condition : job.status().conditions()) {
    if (condition.type() == type && condition.status() == "True") return true;
  }
  return false;
}

bool IsJobCreated(const api::v1::TrainingJob& job) { return HasTrueCondition(job, kCreated); }
bool IsJobRunning(const api::v1::TrainingJob& job) { return HasTrueCondition(job, kRunning); }
bool IsJobSucceeded(const api::v1::TrainingJob& job) { return HasTrueCondition(job, kSucceeded); }
bool IsJobFailed(const api::v1::TrainingJob& job) { return HasTrueCondition(job, kFailed); }
bool IsJobSuspended(const api::v1::TrainingJob& job) { return HasTrueCondition(job, kSuspended); }
bool IsJobFinished(const api::v1::TrainingJob& job) {
  return IsJobSucceeded(job) || IsJobFailed(job);
}

std::string JobState(const api::v1::TrainingJob& job) {
  std::string state;
  for (const api::v1::JobCondition& condition : job.status().conditions()) {
    if (condition.status() == "True") state = condition.type();
  }
  return state;
}

std::string ConditionMessage(const api::v1::TrainingJob& job, const std::string& type) {
  for (const api::v1::JobCondition& condition : job.status().conditions()) {
    if (condition.type() == type) return condition.message();
  }
  return "";
}

}  // namespace coach::sdk
