#pragma once

// `coach describe`'s sections for coach's own part of a job's status (status.coach): how the
// job recovers (attempt, restarts against its budget, disruptions) and how far it got (step,
// rate, last report, metrics).

#include <ostream>

#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"

namespace coach::cli {

// "Recovery:" when the job has attempts to tell of (status.coach's attempt, restarts,
// disruptions, restartsByType or attemptRunningTime, or coach.dev/restart-scope: Job), then
// "Progress:" when status.coach.progress is set; nothing without status.coach. The restart
// budget shown is coach.dev/max-restarts, else runPolicy.backoffLimit (per type:
// coach.dev/max-restarts-<type>), as operator/reconcile/recovery_policy.h reads them; an
// annotation that is no count shows no budget.
void PrintCoachStatus(const api::v1::TrainingJob& job, absl::Time now, std::ostream& out);

}  // namespace coach::cli
