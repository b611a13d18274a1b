// throughput: submits N tiny jobs (a PyTorchJob with one Master running /bin/true) from a
// few client threads as fast as the API accepts them, waits for all to reach Succeeded,
// and prints the submission rate, the completion rate, the operator's CPU seconds and peak
// RSS, and a baseline: posix_spawn + waitpid of N /bin/true from the same number of
// threads, and what the file system where the operator keeps its state charges per mkdir and
// per file created (a job allocates four inodes). Prints figures; it is not a test. See
// bench/README.md.
//
// CPU is utime+stime of the operator process (/proc/<pid>/stat) from just before the first
// CreateJob to the last Succeeded; it does not include the replica shims (separate
// processes). Peak RSS is the operator's VmHWM at the end, since it started.

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/local/bench_util.h"
#include "bench/local/operator_session.h"
#include "sdk/cpp/job_builder.h"
#include "sdk/cpp/training_client.h"

extern char** environ;

namespace coach::bench {
namespace {

struct Flags {
  int jobs = 1000;
  int clients = 4;
  std::string command = "/bin/true";
  std::string ns = "bench-throughput";
  int timeout_s = 600;
  bool skip_baseline = false;
  OperatorFlags op;
};

// Counts jobs of the namespace seen Succeeded / Failed (first time each) on a watch.
class FinishCounter {
 public:
  FinishCounter(sdk::TrainingClient* client, const std::string& ns) : client_(client), ns_(ns) {
    thread_ = std::thread([this] { Run(); });
  }
  ~FinishCounter() {
    cancel_.Cancel();
    thread_.join();
  }
  // Waits until `n` jobs finished or the timeout; returns how many did.
  size_t WaitFinished(size_t n, int timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(timeout_s),
                 [&] { return succeeded_.size() + failed_.size() >= n || !error_.empty(); });
    return succeeded_.size() + failed_.size();
  }
  size_t succeeded() {
    std::lock_guard<std::mutex> lock(mu_);
    return succeeded_.size();
  }
  size_t failed() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_.size();
  }
  int64_t last_finish_ns() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_ns_;
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  void Run() {
    sdk::WatchOptions options;
    options.namespace_ = ns_;
    absl::Status s = client_->Watch(
        options,
        [this](const api::v1::JobEvent& e) {
          const bool ok = sdk::IsJobSucceeded(e.job()), bad = sdk::IsJobFailed(e.job());
          if (!ok && !bad) return true;
          const int64_t now = MonoNs();
          std::lock_guard<std::mutex> lock(mu_);
          const bool fresh = (ok ? succeeded_ : failed_).insert(e.job().metadata().name()).second;
          if (fresh) last_ns_ = now;
          cv_.notify_all();
          return true;
        },
        &cancel_);
    if (!s.ok() && !absl::IsCancelled(s)) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = s.ToString();
      cv_.notify_all();
    }
  }

  sdk::TrainingClient* client_;
  const std::string ns_;
  sdk::CancelHandle cancel_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> succeeded_;
  std::set<std::string> failed_;
  int64_t last_ns_ = 0;
  std::string error_;
  std::thread thread_;
};

// posix_spawn + waitpid of `n` commands from `threads` threads; seconds.
double Baseline(const std::string& command, int n, int threads) {
  std::atomic<int> next{0};
  const int64_t t0 = MonoNs();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      std::string path = command;
      char* argv[] = {path.data(), nullptr};
      while (next.fetch_add(1) < n) {
        pid_t pid;
        if (posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv, environ) == 0) {
          waitpid(pid, nullptr, 0);
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return MsBetween(t0, MonoNs()) / 1000;
}

// What the file system charges for the inodes a job costs: microseconds per mkdir and per
// creation of an empty file, `n` of each, in a fresh directory where the operator's state
// is (MakeTempDir). On ext4 without a journal each allocation scans for an inode not
// recently freed, and costs far more than on tmpfs (bench/README.md).
// -1 for a figure whose calls failed (printed as such, never as a time).
struct FsCost {
  double mkdir_us = -1;
  double create_us = -1;
};
FsCost MeasureFsCost(int n) {
  FsCost cost;
  absl::StatusOr<std::string> dir = MakeTempDir("coach-bench-fs");
  if (!dir.ok()) return cost;
  bool failed = false;
  int64_t t0 = MonoNs();
  for (int i = 0; i < n; ++i) failed |= mkdir(absl::StrCat(*dir, "/d", i).c_str(), 0755) != 0;
  if (!failed) cost.mkdir_us = MsBetween(t0, MonoNs()) * 1000 / n;
  failed = false;
  t0 = MonoNs();
  for (int i = 0; i < n; ++i) {
    const int fd = open(absl::StrCat(*dir, "/f", i).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    failed |= fd < 0;
    if (fd >= 0) close(fd);
  }
  if (!failed) cost.create_us = MsBetween(t0, MonoNs()) * 1000 / n;
  for (int i = 0; i < n; ++i) {
    unlink(absl::StrCat(*dir, "/f", i).c_str());
    rmdir(absl::StrCat(*dir, "/d", i).c_str());
  }
  rmdir(dir->c_str());
  return cost;
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"throughput of tiny jobs on the local backend"};
  app.add_option("--jobs", flags.jobs, "Jobs to submit");
  app.add_option("--clients", flags.clients, "Client threads submitting");
  app.add_option("--command", flags.command, "Each job's command (absolute)");
  app.add_option("--namespace", flags.ns, "Namespace of the benchmark's jobs");
  app.add_option("--timeout", flags.timeout_s, "Seconds to wait for all to finish");
  app.add_flag("--skip-baseline", flags.skip_baseline, "Do not run the baseline");
  AddOperatorFlags(app, &flags.op);
  CLI11_PARSE(app, argc, argv);
  const std::string load_before = LoadAverage();

  absl::StatusOr<std::unique_ptr<OperatorSession>> session =
      OperatorSession::Open(flags.op, flags.ns);
  if (!session.ok()) {
    std::cerr << "throughput: " << session.status() << "\n";
    return 1;
  }
  sdk::TrainingClient& client = (*session)->client();
  const pid_t op_pid = (*session)->operator_pid();

  // Jobs built before the clock starts.
  const std::string tag = absl::StrCat(getpid());
  std::vector<api::v1::TrainingJob> jobs;
  for (int i = 0; i < flags.jobs; ++i) {
    absl::StatusOr<api::v1::TrainingJob> job =
        sdk::JobBuilder::PyTorch(absl::StrCat("tp-", tag, "-", i))
            .Namespace(flags.ns)
            .Image("local")
            .Command({flags.command})
            .Masters(1)
            .RestartPolicy("Never")
            .Build();
    if (!job.ok()) {
      std::cerr << "throughput: " << job.status() << "\n";
      return 1;
    }
    jobs.push_back(std::move(job).value());
  }

  FinishCounter finished(&client, flags.ns);
  absl::SleepFor(absl::Milliseconds(200));  // let the watch open
  ProcUsage before;
  if (op_pid > 0) {
    absl::StatusOr<ProcUsage> u = ReadProcUsage(op_pid);
    if (u.ok()) before = *u;
  }

  std::atomic<int> next{0};
  std::atomic<int> rejected{0};
  std::atomic<int64_t> last_accept{0};
  const int64_t t0 = MonoNs();
  std::vector<std::thread> clients;
  for (int c = 0; c < flags.clients; ++c) {
    clients.emplace_back([&] {
      for (int i; (i = next.fetch_add(1)) < flags.jobs;) {
        for (int attempt = 0;; ++attempt) {
          absl::StatusOr<api::v1::TrainingJob> got = client.CreateJob(jobs[i]);
          if (got.ok()) break;
          if ((absl::IsUnavailable(got.status()) || absl::IsResourceExhausted(got.status())) &&
              attempt < 20) {
            absl::SleepFor(absl::Milliseconds(10));
            continue;
          }
          std::cerr << "throughput: CreateJob " << jobs[i].metadata().name() << ": " << got.status()
                    << "\n";
          rejected.fetch_add(1);
          break;
        }
        int64_t now = MonoNs(), prev = last_accept.load();
        while (now > prev && !last_accept.compare_exchange_weak(prev, now)) {
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const int64_t t_submitted = MonoNs();
  const int accepted = flags.jobs - rejected.load();
  const size_t done = finished.WaitFinished(static_cast<size_t>(accepted), flags.timeout_s);
  const int64_t t_done = finished.last_finish_ns() > 0 ? finished.last_finish_ns() : MonoNs();
  ProcUsage after;
  if (op_pid > 0) {
    absl::StatusOr<ProcUsage> u = ReadProcUsage(op_pid);
    if (u.ok()) after = *u;
  }
  const std::string load_mid = LoadAverage();

  double baseline_s = -1;
  FsCost fs;
  if (!flags.skip_baseline) {
    baseline_s = Baseline(flags.command, flags.jobs, flags.clients);
    fs = MeasureFsCost(500);
  }
  const std::string load_after = LoadAverage();

  const double submit_s = MsBetween(t0, t_submitted) / 1000;
  const double total_s = MsBetween(t0, t_done) / 1000;
  std::cout << absl::StrFormat(
      "throughput: %d PyTorchJobs (1 Master: %s), %d client threads, operator workers %s\n",
      flags.jobs, flags.command, flags.clients,
      flags.op.operator_workers > 0 ? absl::StrCat(flags.op.operator_workers) : "default");
  std::cout << "host: " << CpuCount() << " CPUs, load average before " << load_before
            << ", after the jobs " << load_mid << ", after the baseline " << load_after << "\n";
  std::cout << absl::StrFormat(
      "accepted %d, rejected %d; finished %d (Succeeded %d, Failed %d)%s\n", accepted,
      rejected.load(), done, finished.succeeded(), finished.failed(),
      done < static_cast<size_t>(accepted) ? " -- TIMED OUT" : "");
  std::cout << absl::StrFormat("%-44s %10.1f jobs/s  (%.2f s for all)\n",
                               "submission rate (CreateJob accepted)",
                               accepted / std::max(submit_s, 1e-9), submit_s);
  std::cout << absl::StrFormat("%-44s %10.1f jobs/s  (%.2f s from first CreateJob)\n",
                               "completion rate (Succeeded seen on watch)",
                               static_cast<double>(done) / std::max(total_s, 1e-9), total_s);
  if (op_pid > 0) {
    const double cpu = after.cpu_seconds - before.cpu_seconds;
    std::cout << absl::StrFormat("%-44s %10.2f s  (%.2f ms per job, %.0f%% of one CPU)\n",
                                 "operator CPU (utime+stime) during the run", cpu,
                                 1000 * cpu / std::max<double>(1, done),
                                 100 * cpu / std::max(total_s, 1e-9));
    std::cout << absl::StrFormat(
        "%-44s %10.1f MiB (RSS now %.1f MiB)\n", "operator peak RSS (VmHWM)",
        static_cast<double>(after.vm_hwm_kb) / 1024, static_cast<double>(after.vm_rss_kb) / 1024);
  }
  if (baseline_s > 0) {
    std::cout << absl::StrFormat("%-44s %10.1f /s      (%.2f s for all)\n",
                                 absl::StrCat("baseline: posix_spawn+wait ", flags.command),
                                 flags.jobs / baseline_s, baseline_s);
    const double ratio =
        (flags.jobs / baseline_s) / std::max(static_cast<double>(done) / total_s, 1e-9);
    std::cout << absl::StrFormat(
        "ratio baseline/coach completion rate: %.1fx (goal within 5x: %s)\n", ratio,
        ratio <= 5 ? "met" : "NOT met");
    // A job allocates 4 inodes: its directory, its log, the shim's process and exit files.
    std::cout << absl::StrFormat(
        "%-44s %10.1f us per mkdir, %.1f us per file created (a job: 1 + 3)\n",
        "file system where the state is", fs.mkdir_us, fs.create_us);
  }
  (*session)->StopOperator();
  return done >= static_cast<size_t>(accepted) && rejected.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coach::bench

int main(int argc, char** argv) { return coach::bench::Main(argc, argv); }
