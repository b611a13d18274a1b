#pragma once

// The local backend's files under its state dir, one directory per job (a directory costs an
// inode allocation, the dearest file-system call of a start: bench/README.md):
//   replicas/<ns>/<job>/<pod>.log            (log_files.h; the shim's, rotated to .log.1)
//   replicas/<ns>/<job>/<pod>.process        (the shim's process and exit files, exit_record.h)
//   replicas/<ns>/<job>/<pod>.exit
//   replicas/<ns>/<job>/<pod>.progress       (the shim's, progress_file.h)
//   replicas/<ns>/<job>/<pod>.heartbeat      (the replica's own, COACH_HEARTBEAT_FILE)
//   replicas/<ns>/<job>/<pod>.restart_count  (carried over to the next pod of the name: its
//                                            restarts and the attempt that wrote <pod>.log)
//   replicas/<ns>/<job>/attempts/<n>/<pod>.log  (an ended attempt's logs, and their .log.1)
//   configmaps/<ns>/<job>/<name>/<key>       (ConfigMap data)
//   mlflow-python/                           (the MLflow binding, integrations/mlflow/binding.h)
//
// A job restarts as a whole and the next attempt's pods reuse the names, so when a pod starts for
// another attempt than the one that wrote its log, that log moves to attempts/<n>/ first (n: the
// attempt that wrote it) and the new attempt's log starts empty. kKeptAttempts of them stay.
//
// A ConfigMap's `data` is written for programs that want to read it (MPI's hostfile and
// discover_hosts.sh); nothing is mounted, so OMPI_* variables pointing at /etc/mpi are left as
// the reconciler wrote them.
//
// Paths and the few file operations on them; no state of its own. Thread-safe.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/v1/coach_status.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

// The ended attempts whose logs a job keeps: attempt 0 and the latest others. With the attempt
// that runs, they are the kMaxAttempts attempts that status.coach.attempts lists, so that every
// attempt the status shows has its logs and no other does.
inline constexpr int kKeptAttempts = api::v1::kMaxAttempts - 1;

class LocalLayout {
 public:
  // `state_dir` is absolute (LocalBackend::Create checks it).
  explicit LocalLayout(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  const std::string& state_dir() const { return state_dir_; }

  // "<state_dir>/replicas/<ns>/<job>/<pod>.": the prefix that names the pod's shim files
  // (ProcessSpec::replica_files).
  std::string ReplicaFiles(const store::JobKey& job, const std::string& pod) const;
  // The pod's log. Errors: InvalidArgument (a name is not a safe path component).
  absl::StatusOr<std::string> LogPath(const store::JobKey& job, const std::string& pod) const;
  // Creates the pod's log (empty) and the job's directory where they do not exist yet, so
  // that the logs of a starting pod read as empty. Errors: InvalidArgument (unsafe name),
  // Internal.
  absl::Status CreateLog(const store::JobKey& job, const std::string& pod) const;

  std::string RestartCountPath(const store::JobKey& job, const std::string& pod) const;
  // What a deleted pod leaves to the next pod of its name (RestartCountPath). Its record is gone
  // by then, and the attempt is needed when the next pod starts: it tells whether the live log is
  // an earlier attempt's (KeepAttemptLog).
  struct Carried {
    int restarts = 0;
    // The attempt whose run wrote the pod's live log; unset when unknown (a file written before
    // attempts were kept).
    std::optional<int> attempt;
  };
  // What was carried over to the next pod of this name; zero restarts and no attempt when none
  // was.
  Carried CarriedOver(const store::JobKey& job, const std::string& pod) const;
  // Carries `carried` over to the next pod of this name (synced). Errors: Internal.
  absl::Status CarryOver(const store::JobKey& job, const std::string& pod,
                         const Carried& carried) const;
  // Every pod of the job that carried something over, by name. Errors: Internal.
  absl::StatusOr<std::map<std::string, Carried>> CarriedOverAll(const store::JobKey& job) const;
  // Removes the files of the pod's ended run (kRunFileNames: process, exit, progress,
  // heartbeat), which its job's directory outlives (restart_count stays), so that nothing of
  // it reads as the next run's. Left there, a crash after the next attempt's record is
  // written but before its process starts would let LocalBackend::Start() adopt the ended
  // attempt as the new one and count its exit as one more failure (found by
  // e2e/local:chaos_kill_test: a job failed for backoffLimit with every replica restarted
  // once). Errors: Internal (a file could not be removed).
  absl::Status RemoveEndedAttemptFiles(const store::JobKey& job, const std::string& pod) const;

  // "<state_dir>/replicas/<ns>/<job>/attempts/<attempt>": the logs kept of an ended attempt.
  // Errors: InvalidArgument (a name is not a safe path component, a negative attempt).
  absl::StatusOr<std::string> AttemptLogDir(const store::JobKey& job, int attempt) const;
  // Moves the pod's live log and its rotated .1, which attempt `ended` wrote, into
  // AttemptLogDir(ended), so that the next attempt's log starts empty. Call it before the next
  // attempt's record is written. A file whose place there is taken stays where it is, so a move
  // never replaces a kept log: after a crash the retry moves only what is left, and when the next
  // attempt's start failed before its process ran (its record dropped, the carried attempt still
  // the ended one) the live log is that start's and stays. Idempotent. Errors: InvalidArgument (as
  // AttemptLogDir), Internal.
  absl::Status KeepAttemptLog(const store::JobKey& job, const std::string& pod, int ended) const;
  // Removes the kept attempts beyond kKeptAttempts: attempt 0's and the latest others stay.
  // Idempotent. Errors: Internal.
  absl::Status TrimKeptAttempts(const store::JobKey& job) const;
  // The attempts whose logs are kept, ascending. Errors: Internal.
  absl::StatusOr<std::vector<int>> KeptAttempts(const store::JobKey& job) const;
  // The pods whose logs AttemptLogDir(attempt) holds, by name. Errors: InvalidArgument (as
  // AttemptLogDir), Internal.
  absl::StatusOr<std::vector<std::string>> KeptLogPods(const store::JobKey& job, int attempt) const;

  // "<state_dir>/configmaps/<ns>/<job>/<name>". Errors: InvalidArgument (a name is not a safe
  // path component).
  absl::StatusOr<std::string> ConfigMapDir(const store::JobKey& job, const std::string& name) const;
  // Writes each (key, value) to <ConfigMapDir>/<key>, skipping keys that are not safe path
  // components. Errors: InvalidArgument (as ConfigMapDir), Internal.
  absl::Status WriteConfigMap(const store::JobKey& job, const std::string& name,
                              const std::map<std::string, std::string>& data) const;

  // Removes the job's replica and ConfigMap directories, its kept attempts' logs with them. A job
  // whose names are not safe path components has none (nothing was written for it). Idempotent.
  // Errors: Internal.
  absl::Status RemoveJob(const store::JobKey& job) const;

  std::string MlflowBindingDir() const;

 private:
  const std::string state_dir_;
};

}  // namespace coach::backend::local
