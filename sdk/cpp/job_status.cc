#include "sdk/cpp/job_status.h"

#include <string_view>

#include "api/v1/job_conditions.h"

namespace coach::sdk {
namespace {

// The SDK's public names stay in job_status.h: an installed SDK ships api/v1's generated
// headers and kinds.h only (tools/install_sdk.sh), not job_conditions.h. The build checks
// that they spell what the operator writes.
constexpr bool Same(std::string_view a, std::string_view b) { return a == b; }
static_assert(Same(kCreated, api::v1::kJobCreated));
static_assert(Same(kRunning, api::v1::kJobRunning));
static_assert(Same(kRestarting, api::v1::kJobRestarting));
static_assert(Same(kSucceeded, api::v1::kJobSucceeded));
static_assert(Same(kSuspended, api::v1::kJobSuspended));
static_assert(Same(kFailed, api::v1::kJobFailed));
static_assert(Same(kQueued, api::v1::kJobQueued));

}  // namespace

std::vector<api::v1::JobCondition> GetJobConditions(const api::v1::TrainingJob& job) {
  return {job.status().conditions().begin(), job.status().conditions().end()};
}

bool HasTrueCondition(const api::v1::TrainingJob& job, const std::string& type) {
  for (const api::v1::JobCondition& condition : job.status().conditions()) {
    if (condition.type() == type && condition.status() == api::v1::kConditionTrue) return true;
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
    if (condition.status() == api::v1::kConditionTrue) state = condition.type();
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
