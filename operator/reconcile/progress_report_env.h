#pragma once

// Replicas that report their progress to the operator themselves (the API's ReportProgress;
// coach-launch sends it, operator/server/progress_intake.h checks it). On Kubernetes the
// operator never reads pods' logs for progress: the pods say it.
//
// Which: with ReconcileConfig::progress_report_address set (--progress-report-address), the
// replicas of a job that runs behind coach-launch (coach.dev/launcher: "true") and needs progress
// (coach.dev/progress-deadline, or restarts as a whole job: coach.dev/restart-scope: Job or the
// operator's PyTorchJob default). Every other pod is left exactly as it was.
//
// Such a replica's pod gets a token of its own for coach (kubelet-issued, bound to the pod,
// rotated by the kubelet before it expires) and where to send the reports:
//   volumes += {name: coach-progress-token,
//               projected: {sources: [{serviceAccountToken:
//                   {audience: coach, expirationSeconds: 3600, path: token}}]}}
//   default container:
//     volumeMounts += {name: coach-progress-token,
//                      mountPath: /var/run/secrets/coach.dev/progress, readOnly: true}
//     env += COACH_PROGRESS_ADDRESS=<progress_report_address>
//            COACH_PROGRESS_TOKEN_FILE=/var/run/secrets/coach.dev/progress/token
//            COACH_PROGRESS_CA_PEM=<progress_report_ca_pem>   (only with TLS)
//            COACH_POD_NAMESPACE, COACH_POD_NAME   (fieldRef metadata.namespace, metadata.name:
//                                                  the pod the reports are about)
//            COACH_NOTICE_WAIT=5   (a job that restarts as a whole: checkpoint on notice applies,
//                                  so coach-launch holds a SIGTERM up to 5 s for the request an
//                                  eviction brings; launcher/notice_hold.h)
// The CA goes inline: it is public, and a file would need an object in every job's namespace.

#include "operator/model/reconcile_types.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

inline constexpr char kProgressTokenVolume[] = "coach-progress-token";
inline constexpr char kProgressTokenDir[] = "/var/run/secrets/coach.dev/progress";
inline constexpr char kProgressTokenAudience[] = "coach";
inline constexpr int kProgressTokenSeconds = 3600;
inline constexpr char kEnvProgressAddress[] = "COACH_PROGRESS_ADDRESS";
inline constexpr char kEnvProgressTokenFile[] = "COACH_PROGRESS_TOKEN_FILE";
inline constexpr char kEnvProgressCaPem[] = "COACH_PROGRESS_CA_PEM";
inline constexpr char kEnvPodNamespace[] = "COACH_POD_NAMESPACE";
inline constexpr char kEnvPodName[] = "COACH_POD_NAME";
inline constexpr char kEnvNoticeWait[] = "COACH_NOTICE_WAIT";
// Long enough for the operator to see an eviction and answer a report with its request; short
// against the 30 s a pod has by default between SIGTERM and SIGKILL.
inline constexpr int kNoticeWaitSeconds = 5;

// True when the replicas of `job` report progress under `config` (see above).
bool ReportsProgress(const model::Job& job, const model::ReconcileConfig& config);

// Adds the token volume, its mount and the variables to a replica's pod template when
// ReportsProgress; leaves it untouched otherwise (or when it has no default container).
void AddProgressReporting(const model::Job& job, const model::ReconcileConfig& config,
                          Json& pod_template);

}  // namespace coach::reconcile
