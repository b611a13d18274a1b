#pragma once

// The local backend's files under its state dir, one directory per job (a directory costs an
// inode allocation, the dearest file-system call of a start: bench/README.md):
//   replicas/<ns>/<job>/<pod>.log            (log_files.h; the shim's, rotated to .log.1)
//   replicas/<ns>/<job>/<pod>.process        (the shim's process and exit files, exit_record.h)
//   replicas/<ns>/<job>/<pod>.exit
//   replicas/<ns>/<job>/<pod>.progress       (the shim's, progress_file.h)
//   replicas/<ns>/<job>/<pod>.heartbeat      (the replica's own, COACH_HEARTBEAT_FILE)
//   replicas/<ns>/<job>/<pod>.restart_count  (restarts carried over to the next pod of the name)
//   configmaps/<ns>/<job>/<name>/<key>       (ConfigMap data)
//   mlflow-python/                           (the MLflow binding, integrations/mlflow/binding.h)
//
// A ConfigMap's `data` is written for programs that want to read it (MPI's hostfile and
// discover_hosts.sh); nothing is mounted, so OMPI_* variables pointing at /etc/mpi are left as
// the reconciler wrote them.
//
// Paths and the few file operations on them; no state of its own. Thread-safe.

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

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
  // The restarts carried over to the next pod of this name; 0 when none were.
  int CarriedRestartCount(const store::JobKey& job, const std::string& pod) const;
  // Carries `restarts` over to the next pod of this name (synced). Errors: Internal.
  absl::Status CarryRestartCount(const store::JobKey& job, const std::string& pod,
                                 int restarts) const;
  // Removes the files of the pod's ended run (kRunFileNames: process, exit, progress,
  // heartbeat), which its job's directory outlives (restart_count stays), so that nothing of
  // it reads as the next run's. Left there, a crash after the next attempt's record is
  // written but before its process starts would let LocalBackend::Start() adopt the ended
  // attempt as the new one and count its exit as one more failure (found by
  // e2e/local:chaos_kill_test: a job failed for backoffLimit with every replica restarted
  // once). Errors: Internal (a file could not be removed).
  absl::Status RemoveEndedAttemptFiles(const store::JobKey& job, const std::string& pod) const;

  // "<state_dir>/configmaps/<ns>/<job>/<name>". Errors: InvalidArgument (a name is not a safe
  // path component).
  absl::StatusOr<std::string> ConfigMapDir(const store::JobKey& job, const std::string& name) const;
  // Writes each (key, value) to <ConfigMapDir>/<key>, skipping keys that are not safe path
  // components. Errors: InvalidArgument (as ConfigMapDir), Internal.
  absl::Status WriteConfigMap(const store::JobKey& job, const std::string& name,
                              const std::map<std::string, std::string>& data) const;

  // Removes the job's replica and ConfigMap directories. A job whose names are not safe path
  // components has none (nothing was written for it). Idempotent. Errors: Internal.
  absl::Status RemoveJob(const store::JobKey& job) const;

  std::string MlflowBindingDir() const;

 private:
  const std::string state_dir_;
};

}  // namespace coach::backend::local
