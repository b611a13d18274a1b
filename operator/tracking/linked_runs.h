#pragma once

// The training code's own MLflow runs of a job, found and linked to the job's run.
//
// A replica's code makes runs of its own where it names another experiment, server, run name or
// parent, and on every rank but the master's (operator/reconcile/mlflow_env.h). They are found
// two ways: the in-process binding records each on the job's run as the tag
// coach.linked_run.<run id> = {"experiment_id", "replica", "rank", "tracking_uri" (only when
// another server)}; and every run MLflow creates carries the job's uid (MLFLOW_RUN_CONTEXT), so a
// search of the job's experiment, the experiments the tags name and the most recently updated
// ones finds those a replica without the binding made. Runs on other servers are known only
// from the tags.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "integrations/mlflow/tracking_client.h"

namespace coach::tracking {

inline constexpr char kLinkedRunTagPrefix[] = "coach.linked_run.";
// At most this many of the code's runs are linked (a job may make runs without bound).
inline constexpr size_t kMaxLinkedRuns = 64;
// The experiments searched for them (the job's, those the binding names, then the most recently
// updated), and how many go in one runs/search request.
inline constexpr size_t kMaxSearchedExperiments = 500;
inline constexpr size_t kExperimentsPerSearch = 100;

struct LinkedRun {
  std::string run_id;
  std::string experiment_id;
  std::string tracking_uri;  // "" : the job's server
  std::string replica;       // "worker-0"; "" when unknown
  std::string rank;          // "" when unknown
  bool tagged = false;       // already recorded on the job's run
};

// The MLflow UI's address of a run.
std::string RunUrl(const std::string& tracking_uri, const std::string& experiment_id,
                   const std::string& run_id);

// The code's runs of the job whose run is `job_run_id` (uid `uid`, experiment
// `job_experiment_id`), at most kMaxLinkedRuns, ordered by replica then run id. Errors: the
// client's.
absl::StatusOr<std::vector<LinkedRun>> FindLinkedRuns(mlflow::TrackingClient& client,
                                                      const std::string& job_run_id,
                                                      const std::string& uid,
                                                      const std::string& job_experiment_id);

// The coach.linked_run.* tags for the runs not yet tagged.
std::vector<mlflow::Tag> LinkTags(const std::vector<LinkedRun>& runs);

// The value of the job's annotation coach.dev/mlflow-runs (operator/reconcile/mlflow_env.h):
// JSON [{"replica", "run_id", "url"}], the job's run first (replica "job").
std::string RunsAnnotation(const std::string& tracking_uri, const std::string& job_experiment_id,
                           const std::string& job_run_id, const std::vector<LinkedRun>& runs);

}  // namespace coach::tracking
