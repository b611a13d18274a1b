// coach-operator's exit codes, besides 0 (stopped by SIGTERM/SIGINT, or --help and --version).

#pragma once

namespace coach::cmd {

// Start-up failed, or this replica lost the lease while leading (leader_gate.h).
inline constexpr int kExitFailure = 1;
// A flag is wrong: nothing was started.
inline constexpr int kExitUsage = 2;

}  // namespace coach::cmd
