// history_bench: what keeping every replica's log costs at 2,000 pods (bench/README.md, section
// bench/history), against a real S3 store (SeaweedFS, started by bench/history/run.sh, which
// passes its endpoint and credentials as COACH_S3_* and its pid as --store-pid).
//
// Phases, one process, the same pods and log bytes:
//   reads    the baseline: every pod's log read through the backend from 16 threads, nothing
//            kept (what reading alone costs).
//   keep     what is built: a LogKeeper with a HistoryStore on the S3 store; PodsDeleting for
//            every job from --callers threads (the controller's reconcile workers at a
//            whole-job restart), then WaitIdle. One S3 PUT per pod kept. Run at the operator's
//            bound on bytes waiting for the store (--max-pending-mib) and, when that dropped
//            logs, again with the bound lifted, so that one run keeps every log.
//   ship     the alternative: coach-launch shipping its replica's output as it runs. S3 has no
//            append, so each flush is an object of its own (a multipart upload's parts are 5 MiB
//            at least, which a log of this size never fills): flushes PUTs per pod of the same
//            bytes, issued from --ship-threads threads as fast as the store takes them, for the
//            first --ship-pods pods (2,000 pods' 120,000 PUTs take minutes on 2 cores).
//
// The backend is a stand-in: StreamLogs serves each pod's log from memory in 64 KiB chunks, as
// a GET pods/<name>/log answer arrives. What the API server and the kubelet spend reading logs
// is not in these figures, nor (for ship) the launchers' own buffering.
//
// Per phase: wall time, this process's CPU (getrusage utime+stime), the store's CPU (its
// /proc/<pid>/stat), requests (log reads, S3 requests counted by a decorator around the
// ObjectStore), bytes stored, and peak RSS over the phase's start (VmHWM, reset through
// /proc/self/clear_refs at each phase's start; it is process-wide).
//
// Usage: history_bench [--jobs N] [--replicas K] [--log-kib KIB] [--callers C] [--readers R]
//        [--max-pending-mib M] [--flush-s S] [--attempt-minutes M] [--ship-pods P]
//        [--ship-threads T] [--store-pid PID] [--skip-ship]

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "integrations/s3/object_store.h"
#include "integrations/s3/s3_object_store.h"
#include "operator/backend/backend.h"
#include "operator/history/history_store.h"
#include "operator/history/log_keeper.h"
#include "operator/metrics/registry.h"

namespace coach::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Flags {
  int jobs = 250;
  int replicas = 8;
  int log_kib = 256;
  int callers = 2;
  int readers = 16;
  int max_pending_mib = 256;
  double flush_s = 10;
  double attempt_minutes = 10;
  int ship_pods = 400;
  int ship_threads = 32;
  int store_pid = 0;
  bool skip_ship = false;
};

double Seconds(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A line of /proc/self/status ("VmHWM:"), in MiB; 0 when absent.
double StatusMiB(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      return std::strtod(line.c_str() + field.size(), nullptr) / 1024.0;
    }
  }
  return 0;
}

// Resets VmHWM to the current RSS (Linux 4.0+); false when refused.
bool ResetPeak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// utime+stime of another process (every thread of it), in seconds; -1 when unreadable.
double ProcessCpuSeconds(int pid) {
  if (pid <= 0) return -1;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  // After the command: state is field 3; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::strtod(field.c_str(), nullptr);
    if (i == 15) stime = std::strtod(field.c_str(), nullptr);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

// The log every pod printed: training-like lines, `bytes` long.
std::string MakeLog(size_t bytes) {
  std::string log;
  log.reserve(bytes + 128);
  for (int step = 0; log.size() < bytes; ++step) {
    absl::StrAppendFormat(&log,
                          "[rank %d] epoch %d step %6d loss %.6f lr %.2e grad_norm %.4f "
                          "%.1f samples/s\n",
                          step % 8, step / 500, step, 2.5 / (1 + step * 0.01),
                          1e-4 * (1 + step % 7), 0.5 + (step * 7919 % 1000) / 1000.0,
                          1000.0 + (step * 104729 % 5000) / 10.0);
  }
  log.resize(bytes);
  return log;
}

// The stand-in for the API server's answer to GET pods/<name>/log: every replica's log is `log`,
// handed to the sink in chunks of `chunk` bytes, each a fresh string (as a response body's chunks
// are).
class MemoryLogBackend final : public backend::Backend {
 public:
  MemoryLogBackend(const std::string* log, size_t chunk) : log_(log), chunk_(chunk) {}

  std::string Name() const override { return "memory"; }
  void SetChangeCallback(backend::ChangeCallback) override {}
  absl::Status Start() override { return absl::OkStatus(); }
  void Stop() override {}
  absl::Status Admit(const model::Job&) override { return absl::OkStatus(); }
  std::shared_ptr<const model::AddressPlan> AddressPlanFor(const model::Job&) override {
    return nullptr;
  }
  absl::StatusOr<model::ObservedState> Observe(const model::Job&) override {
    return model::ObservedState{};
  }
  absl::Status Apply(const model::Job&, const model::Action&) override { return absl::OkStatus(); }
  absl::Status Forget(const model::Job&) override { return absl::OkStatus(); }

  absl::Status StreamLogs(const model::Job&, const backend::LogOptions& options,
                          const backend::LogSink& sink,
                          const std::atomic<bool>& cancelled) override {
    if (options.replica.empty()) return absl::NotFoundError("one replica at a time here");
    reads_.fetch_add(1, std::memory_order_relaxed);
    for (size_t off = 0; off < log_->size() && !cancelled.load(); off += chunk_) {
      const std::string piece = log_->substr(off, chunk_);
      if (!sink(options.replica, piece)) break;
    }
    return absl::OkStatus();
  }

  int64_t reads() const { return reads_.load(); }

 private:
  const std::string* const log_;
  const size_t chunk_;
  std::atomic<int64_t> reads_{0};
};

// Counts what reaches the store, and times each PUT.
class CountingObjectStore final : public s3::ObjectStore {
 public:
  explicit CountingObjectStore(s3::ObjectStore* inner) : inner_(inner) {}

  struct Counts {
    int64_t puts = 0, gets = 0, lists = 0, deletes = 0, failed = 0, put_bytes = 0;
    int64_t requests() const { return puts + gets + lists + deletes; }
    Counts operator-(const Counts& o) const {
      return {puts - o.puts,       gets - o.gets,     lists - o.lists,
              deletes - o.deletes, failed - o.failed, put_bytes - o.put_bytes};
    }
  };

  absl::Status Put(absl::string_view key, absl::string_view bytes) override {
    const auto t0 = SteadyClock::now();
    absl::Status s = inner_->Put(key, bytes);
    const double ms = Seconds(t0, SteadyClock::now()) * 1e3;
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.puts;
    counts_.put_bytes += static_cast<int64_t>(bytes.size());
    if (!s.ok()) ++counts_.failed;
    put_ms_.push_back(ms);
    if (!s.ok() && first_error_.empty()) first_error_ = s.ToString();
    return s;
  }
  absl::StatusOr<std::string> Get(absl::string_view key, size_t max_bytes) override {
    auto r = inner_->Get(key, max_bytes);
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.gets;
    return r;
  }
  absl::StatusOr<s3::ListResult> List(absl::string_view prefix, int max_keys) override {
    auto r = inner_->List(prefix, max_keys);
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.lists;
    if (!r.ok()) ++counts_.failed;
    return r;
  }
  absl::Status Delete(absl::string_view key) override {
    absl::Status s = inner_->Delete(key);
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.deletes;
    if (!s.ok()) ++counts_.failed;
    return s;
  }

  Counts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }
  // The PUT times since the last call, in ms.
  std::vector<double> TakePutMs() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(put_ms_, {});
  }
  std::string first_error() {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }

 private:
  s3::ObjectStore* const inner_;
  std::mutex mu_;
  Counts counts_;
  std::vector<double> put_ms_;
  std::string first_error_;
};

struct Pods {
  std::vector<model::Job> jobs;
  std::vector<std::vector<model::ObservedPod>> pods;  // per job
  std::vector<std::pair<int, std::string>> flat;      // (job, replica) per pod
};

// `f.jobs` jobs of a Master and Workers; `uid` tells one phase's jobs from another's (no key is
// written twice).
Pods MakePods(const Flags& f, const std::string& uid) {
  Pods p;
  for (int j = 0; j < f.jobs; ++j) {
    model::Job job;
    const std::string name = absl::StrFormat("job-%04d", j);
    job.mutable_metadata()->set_namespace_("bench");
    job.mutable_metadata()->set_name(name);
    job.mutable_metadata()->set_uid(absl::StrFormat("%s-%04d", uid, j));
    job.mutable_status()->mutable_coach()->set_attempt(1);
    std::vector<model::ObservedPod> pods;
    for (int r = 0; r < f.replicas; ++r) {
      const std::string replica = r == 0 ? "master-0" : absl::StrCat("worker-", r - 1);
      model::ObservedPod pod;
      pod.name = absl::StrCat(name, "-", replica);
      pod.replica_type = r == 0 ? "Master" : "Worker";
      pod.index = r == 0 ? 0 : r - 1;
      pod.phase = model::PodPhase::kFailed;
      pod.node = absl::StrCat("node-", (j * f.replicas + r) % 100);
      pod.attempt = 0;
      pods.push_back(pod);
      p.flat.emplace_back(j, replica);
    }
    p.jobs.push_back(std::move(job));
    p.pods.push_back(std::move(pods));
  }
  return p;
}

// Runs fn(i) for i in [0, n) from `threads` threads.
template <typename Fn>
void ParallelFor(int threads, int64_t n, Fn fn) {
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int64_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

struct Phase {
  std::string name;
  int64_t pods = 0;  // whose logs the phase handled
  double wall_s = 0;
  double cpu_s = 0;
  double store_cpu_s = -1;
  int64_t log_reads = 0;
  CountingObjectStore::Counts s3;
  double peak_mib = 0;  // VmHWM over the phase's starting RSS
  double put_p50_ms = 0, put_p99_ms = 0;
  // keep phases
  double kept = 0, dropped = 0, failed = 0;
  int64_t max_pending_mib = 0;
  std::vector<double> call_ms;  // PodsDeleting, per job
  double calls_s = 0;
  bool idle = true;

  double PerPod(double v) const { return v / static_cast<double>(std::max<int64_t>(pods, 1)); }
};

// Measures what `body` costs: wall, CPU, the store's CPU, the peak RSS over the start, the S3
// requests and the log reads it made.
template <typename Body>
void Measure(Phase* p, const Flags& f, CountingObjectStore* store, MemoryLogBackend* backend,
             Body body) {
  malloc_trim(0);
  // After the reset VmHWM is the RSS of that moment; otherwise the growth of the process's peak.
  ResetPeak();
  const double hwm0 = StatusMiB("VmHWM:");
  const auto counts0 = store->counts();
  const int64_t reads0 = backend->reads();
  store->TakePutMs();
  const double store0 = ProcessCpuSeconds(f.store_pid);
  const double cpu0 = CpuSeconds();
  const auto t0 = SteadyClock::now();
  body();
  p->wall_s = Seconds(t0, SteadyClock::now());
  p->cpu_s = CpuSeconds() - cpu0;
  const double store1 = ProcessCpuSeconds(f.store_pid);
  if (store0 >= 0 && store1 >= 0) p->store_cpu_s = store1 - store0;
  p->peak_mib = StatusMiB("VmHWM:") - hwm0;
  p->s3 = store->counts() - counts0;
  p->log_reads = backend->reads() - reads0;
  const std::vector<double> put_ms = store->TakePutMs();
  p->put_p50_ms = Percentile(put_ms, 0.5);
  p->put_p99_ms = Percentile(put_ms, 0.99);
}

// What is built: a LogKeeper on the store; PodsDeleting for every job from f.callers threads (the
// reconcile workers at a whole-job restart of every job), then WaitIdle.
Phase Keep(const std::string& name, const Flags& f, int64_t max_pending_mib, const Pods& pods,
           CountingObjectStore* store, MemoryLogBackend* backend) {
  Phase p;
  p.name = name;
  p.pods = static_cast<int64_t>(pods.flat.size());
  p.max_pending_mib = max_pending_mib;
  metrics::Registry registry;
  history::HistoryStore history_store(store, "coach/");
  history::LogKeeperOptions options;
  options.readers = f.readers;
  options.max_pending_bytes = max_pending_mib << 20;
  p.call_ms.assign(pods.jobs.size(), 0);
  history::LogKeeper keeper(options, backend, &history_store, nullptr, Clock::Real(), &registry);
  const int64_t lists0 = store->counts().lists;
  keeper.Start();
  // The writer's first turn is the retention sweep (a listing): not part of the figures.
  for (int i = 0; i < 1000 && store->counts().lists == lists0; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  absl::SleepFor(absl::Milliseconds(50));
  Measure(&p, f, store, backend, [&] {
    const auto t0 = SteadyClock::now();
    ParallelFor(f.callers, static_cast<int64_t>(pods.jobs.size()), [&](int64_t j) {
      const auto c0 = SteadyClock::now();
      keeper.PodsDeleting(pods.jobs[static_cast<size_t>(j)], pods.pods[static_cast<size_t>(j)]);
      p.call_ms[static_cast<size_t>(j)] = Seconds(c0, SteadyClock::now()) * 1e3;
    });
    p.calls_s = Seconds(t0, SteadyClock::now());
    p.idle = keeper.WaitIdle(absl::Minutes(30));
  });
  keeper.Stop(absl::ZeroDuration());
  metrics::Family* kept = registry.Counter("coach_kept_logs_total", "", {"result"});
  p.kept = kept->Value({"kept"});
  p.dropped = kept->Value({"dropped"});
  p.failed = kept->Value({"failed"});
  return p;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return absl::StrCat(one, " ", five);
}

int Main(int argc, char** argv) {
  Flags f;
  CLI::App app{"the cost of keeping every replica's log (bench/README.md, bench/history)"};
  app.add_option("--jobs", f.jobs, "Jobs, each restarted once (its pods' logs kept)");
  app.add_option("--replicas", f.replicas, "Replicas (pods) per job");
  app.add_option("--log-kib", f.log_kib, "Each pod's log, KiB");
  app.add_option("--callers", f.callers,
                 "Threads calling PodsDeleting (the controller's reconcile workers)");
  app.add_option("--readers", f.readers, "LogKeeperOptions.readers; the baseline's threads");
  app.add_option("--max-pending-mib", f.max_pending_mib,
                 "LogKeeperOptions.max_pending_bytes of the first keep phase, MiB (the "
                 "operator's: 256); a second keep phase lifts it when logs were dropped");
  app.add_option("--flush-s", f.flush_s, "ship: a launcher's flush interval, seconds");
  app.add_option("--attempt-minutes", f.attempt_minutes, "ship: the attempt's length, minutes");
  app.add_option("--ship-pods", f.ship_pods,
                 "ship: pods measured (the first ones; 0: all); per-pod figures are theirs");
  app.add_option("--ship-threads", f.ship_threads, "ship: threads issuing the PUTs");
  app.add_option("--store-pid", f.store_pid, "The store's pid, for its CPU time");
  app.add_flag("--skip-ship", f.skip_ship, "Run the baseline and keep phases only");
  CLI11_PARSE(app, argc, argv);
  if (f.jobs < 1 || f.replicas < 1 || f.log_kib < 1 || f.callers < 1 || f.readers < 1 ||
      f.max_pending_mib < 1 || f.flush_s <= 0 || f.attempt_minutes <= 0 || f.ship_pods < 0 ||
      f.ship_threads < 1) {
    std::fprintf(stderr, "history_bench: every size must be positive\n");
    return 2;
  }
  // A dropped log is a warning each: counted here instead.
  spdlog::set_level(spdlog::level::err);

  s3::S3Options s3o;
  s3o.endpoint = Env("COACH_S3_ENDPOINT");
  s3o.bucket = Env("COACH_S3_BUCKET");
  s3o.access_key_id = Env("COACH_S3_ACCESS_KEY_ID");
  s3o.secret_access_key = Env("COACH_S3_SECRET_ACCESS_KEY");
  if (!Env("COACH_S3_REGION").empty()) s3o.region = Env("COACH_S3_REGION");
  absl::StatusOr<std::unique_ptr<s3::ObjectStore>> s3_store = s3::MakeS3ObjectStore(s3o);
  if (!s3_store.ok()) {
    std::fprintf(stderr, "history_bench: no S3 store (COACH_S3_*; bench/history/run.sh): %s\n",
                 s3_store.status().ToString().c_str());
    return 2;
  }
  CountingObjectStore store(s3_store->get());
  if (absl::Status s = store.Put("warm/probe", "probe"); !s.ok()) {
    std::fprintf(stderr, "history_bench: the store refused a PUT: %s\n", s.ToString().c_str());
    return 1;
  }

  const std::string log = MakeLog(static_cast<size_t>(f.log_kib) * 1024);
  MemoryLogBackend backend(&log, 64 * 1024);
  const Pods pods = MakePods(f, "a");
  const int64_t n = static_cast<int64_t>(pods.flat.size());
  const int flushes =
      std::max(1, static_cast<int>(std::lround(f.attempt_minutes * 60 / f.flush_s)));
  const int64_t ship_pods = f.ship_pods == 0 ? n : std::min<int64_t>(f.ship_pods, n);

  std::printf(
      "history_bench: %lld pods (%d jobs x %d), a log of %d KiB each (%.1f MiB in all), S3 "
      "store %s%s, load %s\n",
      static_cast<long long>(n), f.jobs, f.replicas, f.log_kib,
      static_cast<double>(n) * f.log_kib / 1024, s3o.endpoint.c_str(),
      f.store_pid > 0 ? absl::StrCat(" (pid ", f.store_pid, ")").c_str() : "",
      LoadAverage().c_str());
  std::fflush(stdout);

  // 1. The baseline: the same reads, nothing kept.
  std::atomic<int64_t> read_bytes{0};
  Phase reads;
  reads.name = "reads only (baseline)";
  reads.pods = n;
  Measure(&reads, f, &store, &backend, [&] {
    ParallelFor(f.readers, n, [&](int64_t i) {
      const auto& [job, replica] = pods.flat[static_cast<size_t>(i)];
      backend::LogOptions options;
      options.replica = replica;
      std::atomic<bool> cancelled{false};
      std::string text;
      (void)backend.StreamLogs(
          pods.jobs[static_cast<size_t>(job)], options,
          [&](const std::string&, const std::string& data) {
            text += data;
            return true;
          },
          cancelled);
      read_bytes += static_cast<int64_t>(text.size());
    });
  });

  // 2. What is built, at the operator's bound on what waits for the store (readers wait for
  // room); then, should that still drop logs, with the bound lifted (every log kept).
  std::vector<Phase> keeps;
  keeps.push_back(Keep(absl::StrCat("keep, ", f.max_pending_mib, " MiB pending"), f,
                       f.max_pending_mib, pods, &store, &backend));
  if (keeps.back().dropped > 0) {
    const int64_t all_mib = n * f.log_kib / 1024 + 64;
    keeps.push_back(Keep(absl::StrCat("keep, ", all_mib, " MiB pending"), f, all_mib,
                         MakePods(f, "b"), &store, &backend));
  }
  const Phase& keep = keeps.back();

  // 3. The alternative: each launcher ships its output every flush_s, one object a flush.
  Phase ship;
  ship.name = "ship as they run";
  ship.pods = ship_pods;
  if (!f.skip_ship) {
    Measure(&ship, f, &store, &backend, [&] {
      ParallelFor(f.ship_threads, ship_pods * flushes, [&](int64_t i) {
        const int flush = static_cast<int>(i / ship_pods);
        const auto& [job, replica] = pods.flat[static_cast<size_t>(i % ship_pods)];
        const size_t from = log.size() * static_cast<size_t>(flush) / flushes;
        const size_t to = log.size() * static_cast<size_t>(flush + 1) / flushes;
        const model::Job& jb = pods.jobs[static_cast<size_t>(job)];
        const std::string key =
            absl::StrFormat("ship/logs/bench/%s/%s/attempt-0/%s/%06d.log", jb.metadata().name(),
                            jb.metadata().uid(), replica, flush);
        (void)store.Put(key, absl::string_view(log).substr(from, to - from));
      });
    });
  }

  // The table: per pod, the phase's figures over the pods it handled.
  std::printf("\n%-26s %5s %7s %7s %8s %8s %6s %7s %8s %8s %8s %13s\n", "phase", "pods", "wall",
              "CPU", "CPU/pod", "store/pod", "reads", "S3 reqs", "reqs/pod", "stored", "peak RSS",
              "PUT p50/p99");
  std::printf("%-26s %5s %7s %7s %8s %8s %6s %7s %8s %8s %8s %13s\n", "", "", "s", "s", "ms",
              "CPU ms", "", "", "", "MiB", "+MiB", "ms");
  std::vector<const Phase*> rows = {&reads};
  for (const Phase& k : keeps) rows.push_back(&k);
  if (!f.skip_ship) rows.push_back(&ship);
  for (const Phase* p : rows) {
    std::printf(
        "%-26s %5lld %7.2f %7.3f %8.3f %8s %6lld %7lld %8.2f %8.1f %8.1f %6.1f/%6.1f\n",
        p->name.c_str(), static_cast<long long>(p->pods), p->wall_s, p->cpu_s,
        p->PerPod(p->cpu_s * 1e3),
        p->store_cpu_s < 0 ? "-" : absl::StrFormat("%.3f", p->PerPod(p->store_cpu_s * 1e3)).c_str(),
        static_cast<long long>(p->log_reads), static_cast<long long>(p->s3.requests()),
        p->PerPod(static_cast<double>(p->s3.requests())),
        static_cast<double>(p->s3.put_bytes) / (1 << 20), p->peak_mib, p->put_p50_ms,
        p->put_p99_ms);
  }
  std::printf("\n");
  for (const Phase& k : keeps) {
    std::printf(
        "%s: %.0f kept, %.0f dropped, %.0f failed%s; PodsDeleting per job of %d (a reconcile "
        "worker held): p50 %.1f / p99 %.1f / max %.1f ms, all %zu jobs from %d callers in %.2f "
        "s (waiting for room included), then the writers' PUTs until idle\n",
        k.name.c_str(), k.kept, k.dropped, k.failed, k.idle ? "" : " (NOT idle: timed out)",
        f.replicas, Percentile(k.call_ms, 0.5), Percentile(k.call_ms, 0.99),
        Percentile(k.call_ms, 1.0), pods.jobs.size(), f.callers, k.calls_s);
  }
  if (!f.skip_ship) {
    std::printf(
        "ship: %lld of the %lld pods, %d flushes each (every %.0f s over %.0f min), %.2f KiB "
        "a PUT, %d threads: %.0f PUT/s; all %lld pods would make %lld PUTs\n",
        static_cast<long long>(ship_pods), static_cast<long long>(n), flushes, f.flush_s,
        f.attempt_minutes, static_cast<double>(log.size()) / flushes / 1024, f.ship_threads,
        static_cast<double>(ship.s3.puts) / ship.wall_s, static_cast<long long>(n),
        static_cast<long long>(n * flushes));
  }
  if (const std::string e = store.first_error(); !e.empty()) {
    std::printf("first S3 error: %s\n", e.c_str());
  }
  if (read_bytes.load() != n * static_cast<int64_t>(log.size())) {
    std::printf("baseline read %lld bytes, not %lld\n", static_cast<long long>(read_bytes.load()),
                static_cast<long long>(n * static_cast<int64_t>(log.size())));
  }

  std::string line = absl::StrFormat("ratios: %s / reads only: CPU x%.1f, wall x%.1f", keep.name,
                                     keep.cpu_s / reads.cpu_s, keep.wall_s / reads.wall_s);
  if (!f.skip_ship) {
    auto ratio = [&](double ship_v, double keep_v) {
      return ship.PerPod(ship_v) / keep.PerPod(keep_v);
    };
    absl::StrAppendFormat(
        &line,
        "; ship / keep, per pod: S3 requests x%.1f (keep's log reads counted too: x%.1f), "
        "client CPU x%.2f",
        ratio(static_cast<double>(ship.s3.requests()), static_cast<double>(keep.s3.requests())),
        ratio(static_cast<double>(ship.s3.requests() + ship.log_reads),
              static_cast<double>(keep.s3.requests() + keep.log_reads)),
        ratio(ship.cpu_s, keep.cpu_s));
    if (ship.store_cpu_s >= 0 && keep.store_cpu_s > 0) {
      absl::StrAppendFormat(&line, ", store CPU x%.2f", ratio(ship.store_cpu_s, keep.store_cpu_s));
    }
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace
}  // namespace coach::bench

int main(int argc, char** argv) { return coach::bench::Main(argc, argv); }
