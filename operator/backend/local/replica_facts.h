#pragma once

// ReplicaFacts: what the local backend observes of its replicas besides how they ended, for
// the reconciler's recovery rules (model::ObservedPod): a replica's progress (the shim's
// progress file and the replica's heartbeat, process/progress_file.h) and whether a process of
// it is stopped by a signal (/proc/<pid>/stat state T or t).
//
// Cheap enough for every Observe of every job:
//  - a running replica's progress file is parsed again only when it changed (inode, size,
//    mtime or ctime); otherwise a pass costs a stat of it and one of the heartbeat;
//  - only running replicas are looked at for stopped processes, and each at most once per
//    `stopped_interval` (the kernel formats a whole /proc/<pid>/stat line for each process, the
//    dearest part of a look): those in the replica's cgroup (cgroup.procs, the cgroup named by
//    the shim's process file, read once per run), or, where the replica has none, the shim's
//    descendants in one /proc scan shared by the replicas of the call;
//  - nothing is held for a replica that is not running (a store of finished jobs costs no
//    memory here): its progress is read afresh when asked.
//
// Only the run a handle names is reported: the files of a pod's earlier run are removed before
// the next one starts (kRunFileNames), and what is held for a replica is dropped when its
// handle names another run.
//
// Thread-safe.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/process_handle.h"
#include "operator/backend/local/process/progress_file.h"
#include "operator/model/observed_state.h"

namespace coach::backend::local {

class ReplicaFacts {
 public:
  // `clock` (not owned) paces the looks for stopped processes.
  explicit ReplicaFacts(Clock* clock = Clock::Real(),
                        absl::Duration stopped_interval = absl::Seconds(1))
      : clock_(clock), stopped_interval_(stopped_interval) {}

  struct Replica {
    // The run; pid 0 (not started): nothing is reported.
    ProcessHandle process;
    // Its phase is Running: only then are its processes looked at.
    bool running = false;
  };
  struct Facts {
    // From the progress file, its time the later of the last metric line and the heartbeat's
    // mtime; from the heartbeat alone (step 0, no metrics) when there is no progress file.
    std::optional<model::ObservedPod::Progress> progress;
    // A process of the running run is stopped, as seen at most `stopped_interval` ago.
    bool stopped = false;
  };

  // One Facts for each replica, in order. A file that cannot be read or parsed counts as
  // absent.
  std::vector<Facts> Read(const std::vector<Replica>& replicas);

  // Drops what is held for the replica whose files `replica_files` names (deleted,
  // forgotten).
  void Forget(const std::string& replica_files);

  // How many replicas something is held for.
  size_t held() const;

 private:
  // What identifies one version of a file: a rename puts a new inode in place, a write in
  // place moves the mtime and ctime.
  struct FileVersion {
    ino_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool operator==(const FileVersion& o) const {
      return inode == o.inode && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
    }
  };
  struct Entry {
    pid_t pid = 0;
    uint64_t start_time = 0;
    // The run's cgroup ("" none); nullopt until the process file was read.
    std::optional<std::string> cgroup;
    // The progress file's version when it was last parsed, and what it said (nullopt: no
    // file, or a corrupt one).
    std::optional<FileVersion> progress_version;
    std::optional<ProgressRecord> progress;
    // When the run's processes were last looked at (Clock::Monotonic), and what was seen.
    std::optional<absl::Duration> stopped_checked;
    bool stopped = false;
  };

  // The progress file of a running replica, parsed only when its version changed.
  std::optional<ProgressRecord> CachedProgress(const ProcessHandle& process);
  // The run's cgroup, from its process file once per run.
  std::string CgroupOf(const ProcessHandle& process);
  // Whether a process of the running run is stopped, looked at again only after
  // stopped_interval_. `table`: a /proc scan shared by one Read's replicas.
  bool Stopped(const ProcessHandle& process, std::optional<std::vector<ProcStat>>& table);

  Clock* const clock_;
  const absl::Duration stopped_interval_;

  mutable absl::Mutex mu_;
  // By replica_files.
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::backend::local
