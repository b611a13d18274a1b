// submit_latency: how long from CreateJob until every replica of a 4-replica PyTorchJob
// (1 Master + 3 Workers) runs on the local backend, against the floor of starting the same
// 4 commands directly. Prints figures; it is not a test. See bench/README.md.
//
// Each replica runs replica_probe, which reports CLOCK_MONOTONIC at its first instruction
// to a Unix socket this benchmark listens on, then waits for SIGTERM. Per iteration:
//   t0          just before CreateJob
//   accepted    CreateJob returned (the job is durable in the store)
//   probe       each replica process's own start time: the ground truth
//   active==4   first watch event with the sum of replicaStatuses[*].active == 4
//   Running     first watch event with condition Running=True
//   operator    the later of active==4 and Running: the operator's view of "running"
// The job is then deleted (DeleteJob returns once its replicas are stopped) before the
// next iteration. The baseline, in the same iteration, posix_spawns the same 4 probe
// commands from this process and waits for their 4 reports.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/local/bench_util.h"
#include "bench/local/operator_session.h"
#include "sdk/cpp/job_builder.h"
#include "sdk/cpp/training_client.h"

namespace coach::bench {
namespace {

struct Flags {
  int iterations = 50;
  int warmup = 3;
  int workers = 3;  // Worker replicas next to the one Master
  std::string probe_path;
  std::string ns = "bench-latency";
  OperatorFlags op;
};

// What the watch has seen of each job, by name, in CLOCK_MONOTONIC ns.
struct Seen {
  std::optional<int64_t> active_all;
  std::optional<int64_t> running;
  std::optional<int64_t> deleted;
};

class JobWatcher {
 public:
  JobWatcher(sdk::TrainingClient* client, std::string ns, int want_active)
      : client_(client), ns_(std::move(ns)), want_active_(want_active) {
    thread_ = std::thread([this] { Run(); });
  }
  ~JobWatcher() {
    cancel_.Cancel();
    thread_.join();
  }
  // Waits until `done(seen)` holds for `name` or `timeout_ms` passes.
  Seen WaitUntil(const std::string& name, int64_t timeout_ms,
                 const std::function<bool(const Seen&)>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done(seen_[name]); });
    return seen_[name];
  }
  void Forget(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_.erase(name);
  }
  // Waits for the stream to deliver its first event or to be established.
  void WaitStarted() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return started_; });
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  void Run() {
    sdk::WatchOptions options;
    options.namespace_ = ns_;
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_ = true;  // the server sends nothing for an empty namespace; best effort
      cv_.notify_all();
    }
    absl::Status s = client_->Watch(
        options,
        [this](const api::v1::JobEvent& e) {
          const int64_t now = MonoNs();
          const std::string& name = e.job().metadata().name();
          std::lock_guard<std::mutex> lock(mu_);
          Seen& seen = seen_[name];
          if (e.type() == api::v1::JobEvent::DELETED) {
            if (!seen.deleted) seen.deleted = now;
          } else {
            int active = 0;
            for (const auto& [type, rs] : e.job().status().replica_statuses())
              active += rs.active();
            if (active == want_active_ && !seen.active_all) seen.active_all = now;
            if (sdk::IsJobRunning(e.job()) && !seen.running) seen.running = now;
          }
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
  const int want_active_;
  sdk::CancelHandle cancel_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Seen> seen_;
  bool started_ = false;
  std::string error_;
  std::thread thread_;
};

// Starts `names.size()` probes directly (posix_spawn, HOSTNAME=name), waits for all
// reports; returns ms from before the first spawn to the last start, or -1.
double Baseline(ProbeReceiver* probes, const std::string& probe_path,
                const std::vector<std::string>& names) {
  std::vector<pid_t> pids;
  const int64_t t0 = MonoNs();
  for (const std::string& name : names) {
    std::string host = "HOSTNAME=" + name;
    std::string path = probe_path;
    std::string sock = probes->socket_path();
    char* argv[] = {path.data(), sock.data(), nullptr};
    char* envp[] = {host.data(), nullptr};
    pid_t pid;
    if (posix_spawn(&pid, path.c_str(), nullptr, nullptr, argv, envp) == 0) pids.push_back(pid);
  }
  std::map<std::string, int64_t> got = probes->WaitFor(names, 10000);
  double ms = -1;
  if (got.size() == names.size()) {
    int64_t last = 0;
    for (const auto& [n, t] : got) last = std::max(last, t);
    ms = MsBetween(t0, last);
  }
  for (pid_t p : pids) kill(p, SIGTERM);
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  probes->Erase(names);
  return ms;
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"submit-to-running latency of a 1 Master + N Workers PyTorchJob (local backend)"};
  app.add_option("--iterations", flags.iterations, "Measured jobs");
  app.add_option("--warmup", flags.warmup, "Unmeasured jobs first");
  app.add_option("--workers", flags.workers, "Worker replicas (plus one Master)");
  app.add_option("--probe", flags.probe_path, "replica_probe binary (default: next to this)");
  app.add_option("--namespace", flags.ns, "Namespace of the benchmark's jobs");
  AddOperatorFlags(app, &flags.op);
  CLI11_PARSE(app, argc, argv);
  if (flags.probe_path.empty()) flags.probe_path = FindBazelBin("bench/local/replica_probe");
  if (flags.probe_path.empty()) {
    std::cerr << "submit_latency: --probe is required (replica_probe not found)\n";
    return 2;
  }
  const int replicas = 1 + flags.workers;
  const std::string load_before = LoadAverage();

  absl::StatusOr<std::unique_ptr<OperatorSession>> session =
      OperatorSession::Open(flags.op, flags.ns);
  if (!session.ok()) {
    std::cerr << "submit_latency: " << session.status() << "\n";
    return 1;
  }
  sdk::TrainingClient& client = (*session)->client();
  const pid_t op_pid = (*session)->operator_pid();
  absl::StatusOr<std::unique_ptr<ProbeReceiver>> probes = ProbeReceiver::Create();
  if (!probes.ok()) {
    std::cerr << "submit_latency: " << probes.status() << "\n";
    return 1;
  }
  JobWatcher watcher(&client, flags.ns, replicas);
  watcher.WaitStarted();
  absl::SleepFor(absl::Milliseconds(200));  // let the stream open before the first job

  std::vector<double> accepted, first_start, all_started, active_all, running, op_view, baseline,
      deleted;
  int failures = 0;
  const std::string tag = absl::StrCat(getpid());
  for (int i = 0; i < flags.warmup + flags.iterations; ++i) {
    const bool measured = i >= flags.warmup;
    // Baseline first, in the same conditions.
    std::vector<std::string> base_names;
    for (int r = 0; r < replicas; ++r)
      base_names.push_back(absl::StrCat("base-", tag, "-", i, "-", r));
    const double b = Baseline(probes->get(), flags.probe_path, base_names);

    const std::string name = absl::StrCat("lat-", tag, "-", i);
    absl::StatusOr<api::v1::TrainingJob> job =
        sdk::JobBuilder::PyTorch(name)
            .Namespace(flags.ns)
            .Image("local")
            .Command({flags.probe_path, (*probes)->socket_path()})
            .Masters(1)
            .Workers(flags.workers)
            .RestartPolicy("Never")
            .Build();
    if (!job.ok()) {
      std::cerr << "submit_latency: " << job.status() << "\n";
      return 1;
    }
    std::vector<std::string> pods = {name + "-master-0"};
    for (int w = 0; w < flags.workers; ++w) pods.push_back(absl::StrCat(name, "-worker-", w));

    const int64_t t0 = MonoNs();
    absl::StatusOr<api::v1::TrainingJob> created = client.CreateJob(*job);
    const int64_t t_acc = MonoNs();
    if (!created.ok()) {
      std::cerr << "submit_latency: CreateJob: " << created.status() << "\n";
      ++failures;
      continue;
    }
    std::map<std::string, int64_t> starts = (*probes)->WaitFor(pods, 30000);
    Seen seen =
        watcher.WaitUntil(name, 30000, [](const Seen& s) { return s.active_all && s.running; });
    const int64_t t_del0 = MonoNs();
    absl::Status del = client.DeleteJob(flags.ns, name);
    const int64_t t_del1 = MonoNs();
    if (!del.ok()) std::cerr << "submit_latency: DeleteJob: " << del << "\n";
    (*probes)->Erase(pods);
    watcher.WaitUntil(name, 5000, [](const Seen& s) { return s.deleted.has_value(); });
    watcher.Forget(name);

    if (starts.size() != pods.size() || !seen.active_all || !seen.running) {
      std::cerr << "submit_latency: job " << name << ": " << starts.size() << "/" << pods.size()
                << " replicas reported, active==" << replicas << ": "
                << (seen.active_all ? "seen" : "not seen")
                << ", Running: " << (seen.running ? "seen" : "not seen") << " " << watcher.error()
                << "\n";
      ++failures;
      continue;
    }
    if (!measured) continue;
    int64_t first = INT64_MAX, last = 0;
    for (const auto& [n, t] : starts) first = std::min(first, t), last = std::max(last, t);
    accepted.push_back(MsBetween(t0, t_acc));
    first_start.push_back(MsBetween(t0, first));
    all_started.push_back(MsBetween(t0, last));
    active_all.push_back(MsBetween(t0, *seen.active_all));
    running.push_back(MsBetween(t0, *seen.running));
    op_view.push_back(MsBetween(t0, std::max(*seen.active_all, *seen.running)));
    if (b >= 0) baseline.push_back(b);
    deleted.push_back(MsBetween(t_del0, t_del1));
  }
  const std::string load_after = LoadAverage();

  std::cout << absl::StrFormat(
      "submit_latency: PyTorchJob 1 Master + %d Workers (replica_probe), %d measured + %d "
      "warm-up, %d failed\n",
      flags.workers, flags.iterations, flags.warmup, failures);
  std::cout << "host: " << CpuCount() << " CPUs, load average before " << load_before << ", after "
            << load_after << "\n";
  std::cout << absl::StrFormat("%-44s %5s %8s %8s %8s %8s %8s\n", "ms from just before CreateJob",
                               "n", "p50", "p90", "p99", "min", "max");
  const Summary all = Summarize(all_started), opv = Summarize(op_view), base = Summarize(baseline);
  std::cout << FormatRow("CreateJob returned (accepted, durable)", Summarize(accepted)) << "\n";
  std::cout << FormatRow("first replica process started (probe)", Summarize(first_start)) << "\n";
  std::cout << FormatRow(absl::StrCat("all ", replicas, " replica processes started (probe)"), all)
            << "\n";
  std::cout << FormatRow(absl::StrCat("watch: replicaStatuses active == ", replicas),
                         Summarize(active_all))
            << "\n";
  std::cout << FormatRow("watch: condition Running=True", Summarize(running)) << "\n";
  std::cout << FormatRow("operator view (active==N and Running)", opv) << "\n";
  std::cout << FormatRow(absl::StrCat("baseline: posix_spawn ", replicas, " probes, all started"),
                         base)
            << "\n";
  std::cout << FormatRow("DeleteJob (stops replicas; not in the above)", Summarize(deleted))
            << "\n";
  if (base.p50 > 0) {
    std::cout << absl::StrFormat(
        "ratio coach/baseline at p50: processes started %.1fx, operator view %.1fx\n",
        all.p50 / base.p50, opv.p50 / base.p50);
  }
  // The goal.
  std::cout << absl::StrFormat(
      "goal p50 submit-to-running < 10 ms: processes %s, operator view %s\n",
      all.p50 < 10 ? "met" : "NOT met", opv.p50 < 10 ? "met" : "NOT met");
  if (op_pid > 0) {
    absl::StatusOr<ProcUsage> u = ReadProcUsage(op_pid);
    if (u.ok()) {
      std::cout << absl::StrFormat("operator pid %d: CPU %.2f s total, peak RSS %.1f MiB\n", op_pid,
                                   u->cpu_seconds, static_cast<double>(u->vm_hwm_kb) / 1024);
    }
  }
  (*session)->StopOperator();
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace coach::bench

int main(int argc, char** argv) { return coach::bench::Main(argc, argv); }
