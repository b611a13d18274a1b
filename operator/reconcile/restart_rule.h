#pragma once

// What a replica's restartPolicy makes of a failed pod (kubeflow-v1.md, "runPolicy and
// restarts"): whether the pod is created again, whether the job is Restarting or Failed,
// and which restarts count toward runPolicy.backoffLimit. Policies are the strings of
// api/v1/job_policies.h (admission refuses any other).

#include <string_view>

#include "api/v1/kinds.h"

namespace coach::reconcile {

// Upstream's IsRetryableExitCode: a container killed by a signal (exit code >= 128:
// SIGKILL 137, SIGTERM 143, ...) may succeed when run again; 0..127 is the program's own
// verdict. (A pod that failed with no exit code seen counts as 0xbeef: retryable.)
bool IsRetryableExitCode(int exit_code);

// A Failed pod of a replica under `policy` is deleted so that it is created again:
// Always and OnFailure always, ExitCode when the exit code is retryable, Never never.
bool RecreatesFailedPod(std::string_view policy, int exit_code);

// Under ExitCode, a failure with a permanent exit code: the job fails whatever its kind.
bool IsPermanentFailure(std::string_view policy, int exit_code);

// A replica type with failed pods makes the job Restarting (true) or Failed (false):
// any policy but Never restarts, except on kinds that restart only under ExitCode
// (XGBoostJob); a permanent failure seen (IsPermanentFailure) fails the job.
bool FailureRestartsJob(const api::v1::KindInfo& kind, std::string_view policy,
                        bool permanent_failure_seen);

// Container restarts of pods under `policy` count toward backoffLimit: OnFailure, Always
// and ExitCode (Never pods are not restarted).
bool CountsTowardBackoffLimit(std::string_view policy);

// backoffLimit is reached: with a limit of 0 the first restart fails the job, otherwise
// `restarts` >= the limit (upstream's PastBackoffLimit).
bool BackoffLimitReached(int backoff_limit, int restarts);

}  // namespace coach::reconcile
