#pragma once

// The real ProcessRunner: every replica runs under coach-replica-shim (see
// replica_shim.cc), which leads its own session, runs the command in its own process
// group (and cgroup, where the host lets it), copies its output into the bounded log, and
// leaves the exit status in the replica's exit file (exit_record.h), so that a later
// operator process can still learn how a replica it did not start ended.

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/process/process_runner.h"

namespace coach::backend::local {

class ShimProcessRunner : public ProcessRunner {
 public:
  struct Options {
    // How long Start waits for the shim to report that the command was exec'd.
    absl::Duration start_timeout = absl::Seconds(10);
    // How long Stop waits after SIGKILL before giving up with DeadlineExceeded.
    absl::Duration kill_timeout = absl::Seconds(5);
    // The clock of those waits (they sleep in real time between polls). Not owned.
    Clock* clock = Clock::Real();
    // Whether each replica gets a cgroup of its own where the host lets the shim make one
    // (replica_cgroup.h). Off, the shim's subreaper alone finds the processes that left
    // the replica's group.
    bool replica_cgroups = true;
  };

  // `shim_path`: the coach-replica-shim executable.
  // Errors: InvalidArgument (not an absolute path), NotFound (not an executable file).
  static absl::StatusOr<std::unique_ptr<ShimProcessRunner>> Create(const std::string& shim_path,
                                                                   Options options);
  static absl::StatusOr<std::unique_ptr<ShimProcessRunner>> Create(const std::string& shim_path) {
    return Create(shim_path, Options());
  }

  absl::StatusOr<ProcessHandle> Start(const ProcessSpec& spec) override;
  absl::Status Signal(const ProcessHandle& handle, int sig) override;
  absl::StatusOr<PollResult> Poll(const ProcessHandle& handle) override;
  absl::StatusOr<PollResult> Stop(const ProcessHandle& handle, absl::Duration grace) override;
  absl::StatusOr<ProcessHandle> Recover(const std::string& replica_files) override;
  // The read end of the shim's status pipe: the shim holds the write end until it exits.
  int TakeEndFd(const ProcessHandle& handle) override;

  ~ShimProcessRunner() override;

 private:
  ShimProcessRunner(std::string shim_path, Options options)
      : shim_path_(std::move(shim_path)), options_(options) {}

  // Waits until Poll says the replica is no longer running, or `timeout` passed.
  absl::StatusOr<PollResult> WaitEnded(const ProcessHandle& handle, absl::Duration timeout);
  // Signals the leftovers of a replica whose shim is gone: members of its group that
  // are still in its session. Returns how many were signalled.
  int SignalLeftovers(const ProcessHandle& handle, int sig);
  // Kills and removes the replica's cgroup that the process file names, if the file is that
  // shim's and names the shim's cgroup (ReplicaCgroupName).
  absl::Status KillLeftoverCgroup(const ProcessHandle& handle);

  std::string shim_path_;
  Options options_;
  absl::Mutex end_fds_mu_;
  std::map<pid_t, int> end_fds_ ABSL_GUARDED_BY(end_fds_mu_);  // shim pid -> status pipe
};

}  // namespace coach::backend::local
