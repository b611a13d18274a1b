#include "operator/reconcile/restart_rule.h"

#include "api/v1/job_policies.h"

namespace coach::reconcile {

using api::v1::kRestartPolicyAlways;
using api::v1::kRestartPolicyExitCode;
using api::v1::kRestartPolicyNever;
using api::v1::kRestartPolicyOnFailure;

bool IsRetryableExitCode(int exit_code) { return exit_code >= 128; }

bool RecreatesFailedPod(std::string_view policy, int exit_code) {
  return policy == kRestartPolicyAlways || policy == kRestartPolicyOnFailure ||
         (policy == kRestartPolicyExitCode && IsRetryableExitCode(exit_code));
}

bool IsPermanentFailure(std::string_view policy, int exit_code) {
  return policy == kRestartPolicyExitCode && !IsRetryableExitCode(exit_code);
}

bool FailureRestartsJob(const api::v1::KindInfo& kind, std::string_view policy,
                        bool permanent_failure_seen) {
  if (permanent_failure_seen) return false;
  if (kind.restarts_only_under_exit_code) return policy == kRestartPolicyExitCode;
  return policy != kRestartPolicyNever;
}

bool CountsTowardBackoffLimit(std::string_view policy) {
  return policy == kRestartPolicyOnFailure || policy == kRestartPolicyAlways ||
         policy == kRestartPolicyExitCode;
}

bool BackoffLimitReached(int backoff_limit, int restarts) {
  return backoff_limit == 0 ? restarts > 0 : restarts >= backoff_limit;
}

}  // namespace coach::reconcile
