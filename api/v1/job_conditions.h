#pragma once

// The words of kubeflow.org/v1 job status (upstream v1.9.4 pkg/apis/kubeflow.org/v1 and
// pkg/util/status.go): condition types, condition statuses and reasons. A condition's
// stored reason is "<Kind><Reason>" ("PyTorchJobRunning"); clients match these strings,
// so they are spelled once, here.

namespace coach::api::v1 {

// JobConditionType.
inline constexpr char kJobCreated[] = "Created";
inline constexpr char kJobRunning[] = "Running";
inline constexpr char kJobRestarting[] = "Restarting";
inline constexpr char kJobSucceeded[] = "Succeeded";
inline constexpr char kJobSuspended[] = "Suspended";
inline constexpr char kJobFailed[] = "Failed";

// corev1.ConditionStatus.
inline constexpr char kConditionTrue[] = "True";
inline constexpr char kConditionFalse[] = "False";

// Reasons, before the kind prefix.
inline constexpr char kJobCreatedReason[] = "Created";
inline constexpr char kJobRunningReason[] = "Running";
inline constexpr char kJobRestartingReason[] = "Restarting";
inline constexpr char kJobSucceededReason[] = "Succeeded";
inline constexpr char kJobSuspendedReason[] = "Suspended";
inline constexpr char kJobResumedReason[] = "Resumed";
inline constexpr char kJobFailedReason[] = "Failed";
// coach's: a job that cannot run as written (refused by admission or the API server).
inline constexpr char kJobFailedValidationReason[] = "FailedValidation";
// coach's: a job that made no progress within its coach.dev/progress-deadline, with no restart
// left to try.
inline constexpr char kJobStalledReason[] = "Stalled";
// coach's: Kueue holds the job suspended (its Workload has no quota reserved, or waits for
// admission checks). Condition Queued, True while it waits (reason <Kind>WaitingForQuota or
// <Kind>WaitingForAdmission), False once admitted (reason <Kind>Admitted). A TrainJob keeps it
// in status.coach only: upstream readers see no condition of coach's.
inline constexpr char kJobQueued[] = "Queued";
inline constexpr char kJobWaitingForQuotaReason[] = "WaitingForQuota";
inline constexpr char kJobWaitingForAdmissionReason[] = "WaitingForAdmission";
inline constexpr char kJobAdmittedReason[] = "Admitted";

// Kubeflow Trainer v2's TrainJob conditions (Trainer v2.3 and JobSet v0.12 constants), the only
// ones a TrainJob's status.conditions holds: coach's own vocabulary above stays in
// status.coach (api/v1/codec/train_job_decoder.cc).
inline constexpr char kTrainJobComplete[] = "Complete";
inline constexpr char kTrainJobCompleteReason[] = "AllJobsCompleted";
inline constexpr char kTrainJobCompleteMessage[] = "jobset completed successfully";
inline constexpr char kTrainJobSuspendedReason[] = "Suspended";
inline constexpr char kTrainJobSuspendedMessage[] = "TrainJob is suspended";
inline constexpr char kTrainJobResumedReason[] = "Resumed";
inline constexpr char kTrainJobResumedMessage[] = "TrainJob is resumed";
inline constexpr char kTrainJobFailedJobsReason[] = "FailedJobs";
inline constexpr char kTrainJobMaxRestartsReason[] = "ReachedMaxRestarts";
inline constexpr char kTrainJobDeadlineReason[] = "DeadlineExceeded";
inline constexpr char kTrainJobDeadlineMessage[] = "TrainJob exceeded its active deadline";

}  // namespace coach::api::v1
