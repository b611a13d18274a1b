#pragma once

// What identifies a started replica process across operator restarts. Stored in the
// replica record; given back to ProcessRunner::Poll/Signal/Stop.

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace coach::backend::local {

struct ProcessHandle {
  // The replica shim (the supervisor; leader of its own session).
  pid_t pid = 0;
  // The process group of the user command (inside the shim's session). Signals for the
  // replica go to this group.
  pid_t pgid = 0;
  // The shim's /proc/<pid>/stat start time: (pid, start_time) is the identity, so a
  // recycled pid is never mistaken for the replica.
  uint64_t start_time = 0;
  // Names the shim's `process` and `exit` files (ReplicaFile in exit_record.h).
  std::string replica_files;

  bool operator==(const ProcessHandle& o) const {
    return pid == o.pid && pgid == o.pgid && start_time == o.start_time &&
           replica_files == o.replica_files;
  }
};

}  // namespace coach::backend::local
