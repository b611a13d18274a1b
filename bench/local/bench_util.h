#pragma once

// Shared pieces of the local-backend benchmarks (bench/local): a coach-operator started for
// the run, its CPU and memory from /proc, a receiver for replica_probe's start reports,
// the system load, and percentiles. Harness code, not a library for the operator.

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coach::bench {

// CLOCK_MONOTONIC in nanoseconds: the clock replica_probe reports in.
int64_t MonoNs();
double MsBetween(int64_t from_ns, int64_t to_ns);

// "1.23 0.98 0.75" from /proc/loadavg.
std::string LoadAverage();
int CpuCount();

struct Summary {
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0, mean = 0;
};
// Nearest-rank percentiles of `values`.
Summary Summarize(std::vector<double> values);
// "p50 12.3  p90 ...": one table row, values in ms.
std::string FormatRow(const std::string& label, const Summary& s);

struct ProcUsage {
  double cpu_seconds = 0;  // utime + stime
  int64_t vm_hwm_kb = 0;   // peak RSS
  int64_t vm_rss_kb = 0;
};
absl::StatusOr<ProcUsage> ReadProcUsage(pid_t pid);

// A new directory <$TMPDIR or /tmp>/<prefix>.XXXXXX: where the benches keep the operator's
// state (TMPDIR=/dev/shm puts it on tmpfs).
absl::StatusOr<std::string> MakeTempDir(const std::string& prefix);

// A coach-operator child on the local backend with its own temporary state directory,
// loopback ports picked free, stopped with SIGTERM (then SIGKILL) on destruction.
class OperatorProcess {
 public:
  struct Options {
    std::string operator_path;
    std::string shim_path;
    std::string log_level = "warn";
    int workers = 0;  // 0: the operator's default
    std::vector<std::string> extra_flags;
  };
  // Starts it and waits until its gRPC port accepts connections (up to 30 s).
  static absl::StatusOr<std::unique_ptr<OperatorProcess>> Start(const Options& options);
  ~OperatorProcess();

  const std::string& server() const { return server_; }
  const std::string& state_dir() const { return state_dir_; }
  pid_t pid() const { return pid_; }
  // Stops it (SIGTERM, 10 s, SIGKILL) and removes the state directory unless `keep`.
  void Stop(bool keep_state = false);

 private:
  OperatorProcess() = default;
  pid_t pid_ = -1;
  std::string server_;
  std::string state_dir_;
};

// Binds a Unix datagram socket in a fresh temporary directory and collects replica_probe
// reports ("<name> <mono ns>") on a thread.
class ProbeReceiver {
 public:
  static absl::StatusOr<std::unique_ptr<ProbeReceiver>> Create();
  ~ProbeReceiver();

  const std::string& socket_path() const { return path_; }
  // Waits until every name in `names` has reported, or `timeout_ms` passes. Returns the
  // reported start times (names that did not report are missing).
  std::map<std::string, int64_t> WaitFor(const std::vector<std::string>& names, int64_t timeout_ms);
  // Forgets reports of these names.
  void Erase(const std::vector<std::string>& names);

 private:
  ProbeReceiver() = default;
  void Loop();

  int fd_ = -1;
  std::string dir_;
  std::string path_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int64_t> started_;
};

// Path of a binary built next to this one under bazel-bin, or "" when not found:
// `relative` like "operator/coach-operator".
std::string FindBazelBin(const std::string& relative);

}  // namespace coach::bench
