#pragma once

// A cgroup (v2) per replica: every process a replica starts stays in it whatever it does to
// its process group or session (setsid, daemonizing, job control), so all of them can be
// found and killed when the replica ends. Used by the shim where the host's cgroup v2
// hierarchy is mounted and writable by the operator's user; elsewhere the shim falls back to
// being its replica's subreaper (replica_shim.cc). cgroup v1 is not used.
//
// The replica's cgroup is a child of the shim's own (the operator's), named after the shim
// (ReplicaCgroupName). The shim records its path in the replica's process file, so that a
// runner can still kill what is in it after the shim itself was killed.

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace coach::backend::local {

// The cgroup v2 directory of a process whose /proc/<pid>/cgroup reads `proc_cgroup`, given
// /proc/self/mountinfo's text. Pure. Errors: Unavailable (no "0::" line: no cgroup v2
// hierarchy; or no cgroup2 mount holds the process's cgroup).
absl::StatusOr<std::string> CgroupDirFrom(const std::string& mountinfo,
                                          const std::string& proc_cgroup);

// The calling process's cgroup v2 directory. Errors: Unavailable (as above), Internal (I/O).
absl::StatusOr<std::string> OwnCgroupDir();

// "coach-replica-<pid>-<start time>": the cgroup of the replica whose shim is that process.
std::string ReplicaCgroupName(pid_t shim_pid, uint64_t shim_start_time);

// Removes the empty replica cgroups in `parent` whose shim is no longer running: a shim
// killed by SIGKILL cannot remove its own. A populated one is left to the runner's Stop of
// its replica. Returns how many it removed.
int RemoveStaleReplicaCgroups(const std::string& parent);

// mkdir. Errors: PermissionDenied (not writable: no delegation, read-only mount),
// AlreadyExists, Internal.
absl::Status CreateCgroup(const std::string& dir);

// Moves process `pid` into the cgroup at `dir`. Errors: PermissionDenied, NotFound (no such
// cgroup or process), Internal (EBUSY and the like: the kernel refuses the move).
absl::Status AddToCgroup(const std::string& dir, pid_t pid);

// The processes in the cgroup now. Errors: NotFound (no such cgroup), Internal.
absl::StatusOr<std::vector<pid_t>> CgroupMembers(const std::string& dir);

// SIGKILLs every process in the cgroup (cgroup.kill where the kernel has it, 5.14 on; else each
// member, again until none is left) and waits until it is empty, at most `timeout` on `clock`.
// A missing cgroup is not an error. Errors: DeadlineExceeded (members left: unkillable, in D
// state), Internal.
absl::Status KillCgroup(const std::string& dir, absl::Duration timeout, Clock* clock);

// Removes the (empty) cgroup, retrying while the kernel still counts exiting members, at most
// `timeout` on `clock`. A missing cgroup is not an error. Errors: DeadlineExceeded (still
// busy), Internal.
absl::Status RemoveCgroup(const std::string& dir, absl::Duration timeout, Clock* clock);

}  // namespace coach::backend::local
