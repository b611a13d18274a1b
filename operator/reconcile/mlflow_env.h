#pragma once

// MLflow wiring of a job, pure: which tracking server and experiment a job reports to (its
// annotations, else the operator-wide MlflowConfig), and the environment its replicas get.
//
// Annotations a user may set (validated at admission, ValidateMlflowAnnotations):
//   coach.dev/mlflow                 "true" | "false": opt in/out (false wins over the
//   operator-wide URI) coach.dev/mlflow-tracking-uri    http(s)://host[:port][/prefix], no
//   credentials in it coach.dev/mlflow-experiment      experiment name (default: the operator's,
//   else "coach")
// Annotations the operator writes (a client's values are dropped at admission):
//   coach.dev/mlflow-run-id          the job's run
//   coach.dev/mlflow-experiment-id   its experiment
//   coach.dev/mlflow-runs            the job's run and the training code's own runs
//
// Replicas of a tracked job get only variables that MLflow's client reads and that cannot make it
// raise, whatever the training code does (docs/mlflow.md has the table of cases):
//   MLFLOW_TRACKING_URI       the job's server
//   MLFLOW_EXPERIMENT_NAME    the job's experiment; not when the container names one itself
//                             (MLFLOW_EXPERIMENT_NAME or MLFLOW_EXPERIMENT_ID)
//   MLFLOW_RUN_CONTEXT        JSON tags every run MLflow's fluent API creates gets: coach.job_uid,
//                             coach.namespace, coach.job_name, coach.kind, coach.replica,
//                             coach.replica_type, coach.replica_index and, once the job's run
//                             exists, mlflow.parentRunId (so the code's runs sit under the job's
//                             run)
// and, once the job's run exists, coach's own (MLflow ignores them):
//   COACH_MLFLOW_RUN_ID, COACH_MLFLOW_EXPERIMENT_ID, COACH_MLFLOW_TRACKING_URI  the job's run
//   COACH_MLFLOW_REPLICA      "<type>-<index>"
//   COACH_MLFLOW_RESUME=1     on the job's master replica only (IsMasterRole)
// which coach-launch's metric lines and the in-process binding (integrations/mlflow/python) read.
// MLFLOW_RUN_ID and MLFLOW_EXPERIMENT_ID are never set: MLflow resumes MLFLOW_RUN_ID whatever the
// code does and raises when the code names another experiment or server.
// Plus MlflowConfig::forwarded_env. A variable the container already sets is left alone.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "operator/model/reconcile_types.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {

inline constexpr char kAnnotationMlflow[] = "coach.dev/mlflow";
inline constexpr char kAnnotationMlflowTrackingUri[] = "coach.dev/mlflow-tracking-uri";
inline constexpr char kAnnotationMlflowExperiment[] = "coach.dev/mlflow-experiment";
inline constexpr char kAnnotationMlflowRunId[] = "coach.dev/mlflow-run-id";
inline constexpr char kAnnotationMlflowExperimentId[] = "coach.dev/mlflow-experiment-id";
// The job's MLflow runs, JSON [{"replica", "run_id", "url"}] (operator/tracking/linked_runs.h).
inline constexpr char kAnnotationMlflowRuns[] = "coach.dev/mlflow-runs";

struct MlflowTarget {
  std::string tracking_uri;
  std::string experiment;
  std::string run_id;         // "" until the operator has written the annotation
  std::string experiment_id;  // likewise
};

// OK for an http(s) URI with a host, no whitespace and no user:password@ (secrets do not
// belong in annotations or flags; use MLFLOW_TRACKING_* variables). InvalidArgument otherwise.
absl::Status ValidateTrackingUri(absl::string_view uri);

// InvalidArgument naming the annotation ("metadata.annotations[coach.dev/mlflow-tracking-uri]:
// ..."). A job may name only the operator's own server or one of config.allowed_tracking_uris
// (compared without a trailing '/'), never a link-local or cloud metadata address: the operator
// calls that server, and a job must not direct where the operator's calls go.
absl::Status ValidateMlflowAnnotations(const model::Job& job, const model::MlflowConfig& config);

// "" when the operator may call `uri` for a job, else why not (see ValidateMlflowAnnotations).
std::string JobTrackingUriProblem(absl::string_view uri, const model::MlflowConfig& config);

// Whether `uri` is the operator's own server (config.tracking_uri, trailing '/' aside): only
// calls to it carry the operator's credentials, and only replicas tracked there get them
// (forwarded_env).
bool IsOperatorsServer(absl::string_view uri, const model::MlflowConfig& config);

// Removes the annotations only the operator writes (run and experiment ids).
void ClearOperatorMlflowAnnotations(model::Job* job);

// The server and experiment the job reports to; nullopt when it is not tracked.
std::optional<MlflowTarget> MlflowTargetFor(const model::Job& job,
                                            const model::MlflowConfig& config);

// The variables replica (type, index) of `job` gets (empty when untracked), in a stable order.
// MLFLOW_EXPERIMENT_NAME is among them; AddMlflowEnv leaves it out of a container that names its
// own experiment.
std::vector<std::pair<std::string, std::string>> MlflowEnv(const model::Job& job,
                                                           const model::MlflowConfig& config,
                                                           std::string_view type, int index);

// Adds MlflowEnv to every container of replica (type, index)'s pod template that does not set
// the variable already.
void AddMlflowEnv(const model::Job& job, const model::MlflowConfig& config, std::string_view type,
                  int index, Json& pod_template);

}  // namespace coach::reconcile
