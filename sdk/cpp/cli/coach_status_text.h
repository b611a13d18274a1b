#pragma once

// `coach describe`'s sections for coach's own part of a job's status (status.coach): how the
// job recovers (attempt, restarts against its budget, disruptions), its attempt timeline (also
// `coach history`'s table), how many Workers an elastic job trains with and when that changed,
// and how far it got (step, rate, last report, metrics).

#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"

namespace coach::cli {

// The job's attempt timeline (status.coach.attempts), one row per attempt: ATTEMPT, START, END,
// DURATION, REASON, REPLICA, EXIT ("137 SIGKILL"), NODES (the distinct nodes its replicas ran
// on; over three: the first two and "+N more"), LAST STEP, COUNTED; attempts the
// status no longer keeps (it keeps the first and the latest, api/v1/coach_status.h) as one row
// "1-5  (not kept)". Then "attempt N: <message>" for each attempt with a message. Each line
// starts with `indent`. An attempt without an end time is open: for a live job it runs (END
// "running", its DURATION and LAST STEP as of `now` and the job's progress); for a deleted one
// (`deleted`) `now` is the deletion and END is "-". Nothing without attempts.
void PrintAttemptTimeline(const api::v1::TrainingJob& job, absl::Time now, bool deleted,
                          std::ostream& out, const std::string& indent = "");

// A span as "45s", "5m12s", "2h5m", "3d4h": its two largest units; "0s" when not positive.
std::string FormatSpan(absl::Duration span);

// "Recovery:" when the job has attempts to tell of (status.coach's attempt, restarts,
// disruptions, restartsByType or attemptRunningTime, or coach.dev/restart-scope: Job), then
// "Attempts:" (PrintAttemptTimeline) when it has a timeline, "Elastic:" when
// status.coach.elastic is set (Workers running of minWorkers..maxWorkers, then one row per
// change: CHANGED, AGE, WORKERS, STEP, WHY), "Progress:" when status.coach.progress is set;
// nothing without status.coach. The restart budget shown is coach.dev/max-restarts, else
// runPolicy.backoffLimit (per type: coach.dev/max-restarts-<type>), as
// operator/reconcile/recovery_policy.h reads them; an annotation that is no count shows no
// budget.
void PrintCoachStatus(const api::v1::TrainingJob& job, absl::Time now, std::ostream& out);

}  // namespace coach::cli
