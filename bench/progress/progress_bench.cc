// Figures for bench/progress/run.sh: the operator's cost of replica pods reporting their progress
// (ReportProgress). N simulated pods, each with a pod-bound token of its own and a connection of
// its own, report every INTERVAL seconds into the real server in this process: the gRPC service,
// PodTokenAuth (TokenReviews answered by an in-memory API server), ProgressIntake and a
// KubeBackend whose caches hold the N pods (FakeKubeClient). The pods are a child process, so
// that this process's CPU time is the operator's alone.
//
// Phases (the child's stdout marks each; this process reads getrusage at both ends):
//   first   every pod's first report: a TokenReview each
//   steady  SECONDS of reports every INTERVAL, tokens remembered: the running cost
//   floor   the same calls to a second server whose service takes no reports (UNIMPLEMENTED at
//           once): gRPC's own cost of such a call, the ratio's denominator
// Memory: RSS and malloc'd bytes with the N pods cached and the server up, before any report,
// and after the steady phase; the difference per pod.
//
// Usage: progress_bench [--pods N] [--interval S] [--seconds S] [--pods-per-job K] [--threads T]
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/v1/training_service.grpc.pb.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/progress_book.h"
#include "operator/model/replicas.h"
#include "operator/server/grpc_server.h"
#include "operator/server/pod_token_auth.h"
#include "operator/server/progress_intake.h"
#include "operator/server/testing/token_reviewer.h"
#include "operator/server/training_service_impl.h"

extern char** environ;

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

struct Options {
  int pods = 2000;
  double interval_s = 2;
  double seconds = 20;
  int pods_per_job = 8;
  int threads = 16;
};

bool ParseArgs(int argc, char** argv, int first, Options* o,
               std::map<std::string, std::string>* rest) {
  for (int i = first; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    bool ok = true;
    if (flag == "--pods")
      ok = absl::SimpleAtoi(value, &o->pods);
    else if (flag == "--interval")
      ok = absl::SimpleAtod(value, &o->interval_s);
    else if (flag == "--seconds")
      ok = absl::SimpleAtod(value, &o->seconds);
    else if (flag == "--pods-per-job")
      ok = absl::SimpleAtoi(value, &o->pods_per_job);
    else if (flag == "--threads")
      ok = absl::SimpleAtoi(value, &o->threads);
    else
      (*rest)[flag] = value;
    if (!ok) {
      std::fprintf(stderr, "bad value for %s: %s\n", flag.c_str(), value.c_str());
      return false;
    }
  }
  return o->pods > 0 && o->interval_s > 0 && o->seconds > 0 && o->pods_per_job > 0 &&
         o->threads > 0;
}

void RaiseFdLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double RssMiB() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

double HeapMiB() {
  struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
}

// --- the pods (child process) ---------------------------------------------------------------

struct Pod {
  std::string ns, name, token;
};

struct Tally {
  std::atomic<int64_t> ok{0}, accepted{0}, failed{0}, late_ms_max{0};
};

// One report per pod per round from `round0` to `round0 + rounds`, each pod at its own offset in
// the interval, against `stubs`.
void Drive(const Options& o, const std::vector<Pod>& pods,
           std::vector<std::unique_ptr<coach::api::v1::TrainingService::Stub>>& stubs, int rounds,
           bool floor, Tally* tally) {
  const auto start = SteadyClock::now();
  const auto interval = std::chrono::duration<double>(o.interval_s);
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < rounds; ++k) {
        for (int i = t; i < o.pods; i += o.threads) {
          const auto at = start + std::chrono::duration_cast<SteadyClock::duration>(
                                      interval * (k + static_cast<double>(i) / o.pods));
          std::this_thread::sleep_until(at);
          const auto late =
              std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - at)
                  .count();
          int64_t seen = tally->late_ms_max.load();
          while (late > seen && !tally->late_ms_max.compare_exchange_weak(seen, late)) {
          }
          coach::api::v1::ReportProgressRequest r;
          r.set_namespace_(pods[i].ns);
          r.set_pod(pods[i].name);
          const int64_t step = 100 + 10 * static_cast<int64_t>(k) + i % 7;
          r.set_step(step);
          auto& m = *r.mutable_metrics();
          m["loss"] = 1.0 / static_cast<double>(step);
          m["lr"] = 3e-4;
          m["grad_norm"] = 0.5 + (i % 13) * 0.01;
          m["tokens_per_second"] = 12345.0 + k;
          r.set_steps_per_second(5.0);
          grpc::ClientContext context;
          context.AddMetadata("authorization", "Bearer " + pods[i].token);
          context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
          coach::api::v1::ReportProgressResponse response;
          grpc::Status s = stubs[i]->ReportProgress(&context, r, &response);
          if (s.ok() || (floor && s.error_code() == grpc::StatusCode::UNIMPLEMENTED)) {
            ++tally->ok;
            if (response.accepted()) ++tally->accepted;
          } else {
            if (tally->failed++ == 0) {
              std::fprintf(stderr, "first failure: %d %s\n", s.error_code(),
                           s.error_message().c_str());
            }
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
}

std::vector<std::unique_ptr<coach::api::v1::TrainingService::Stub>> Connect(int port, int n) {
  std::vector<std::unique_ptr<coach::api::v1::TrainingService::Stub>> stubs;
  for (int i = 0; i < n; ++i) {
    grpc::ChannelArguments args;
    // A connection per pod, as pods have.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stubs.push_back(coach::api::v1::TrainingService::NewStub(grpc::CreateCustomChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials(), args)));
  }
  return stubs;
}

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

int Pods(const Options& o, const std::map<std::string, std::string>& rest) {
  RaiseFdLimit();
  int port = 0, floor_port = 0;
  if (!absl::SimpleAtoi(rest.at("--port"), &port) ||
      !absl::SimpleAtoi(rest.at("--floor-port"), &floor_port)) {
    return 2;
  }
  std::vector<Pod> pods;
  std::ifstream in(rest.at("--tokens"));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() == 3) pods.push_back({f[0], f[1], f[2]});
  }
  if (static_cast<int>(pods.size()) != o.pods) return 2;
  const int rounds = std::max(1, static_cast<int>(o.seconds / o.interval_s));
  auto stubs = Connect(port, o.pods);
  Tally first, steady, floor_warm, floor;
  Say("begin first");
  Drive(o, pods, stubs, 1, false, &first);
  Say(absl::StrCat("end first ", first.ok.load(), " ", first.accepted.load(), " ",
                   first.failed.load(), " ", first.late_ms_max.load()));
  Say("begin steady");
  Drive(o, pods, stubs, rounds, false, &steady);
  Say(absl::StrCat("end steady ", steady.ok.load(), " ", steady.accepted.load(), " ",
                   steady.failed.load(), " ", steady.late_ms_max.load()));
  // The reports' connections go first: the floor is measured with as many open as the steady
  // phase had.
  stubs.clear();
  auto floor_stubs = Connect(floor_port, o.pods);
  Drive(o, pods, floor_stubs, 1, true, &floor_warm);
  Say("begin floor");
  Drive(o, pods, floor_stubs, rounds, true, &floor);
  Say(absl::StrCat("end floor ", floor.ok.load(), " ", floor.accepted.load(), " ",
                   floor.failed.load(), " ", floor.late_ms_max.load()));
  return 0;
}

// --- the operator (this process) ------------------------------------------------------------

struct Phase {
  double cpu0 = 0, cpu1 = 0, wall0 = 0, wall1 = 0;
  int64_t ok = 0, accepted = 0, failed = 0, late_ms = 0;
  double CpuUsPerCall() const { return ok > 0 ? (cpu1 - cpu0) * 1e6 / ok : 0; }
};

double WallSeconds() {
  return std::chrono::duration<double>(SteadyClock::now().time_since_epoch()).count();
}

int Operator(const Options& o, const char* self) {
  RaiseFdLimit();
  coach::server::testing::TokenReviewer api;
  const std::string ns = "bench";
  std::ostringstream tokens;
  const absl::Time expires = absl::Now() + absl::Hours(2);
  for (int i = 0; i < o.pods; ++i) {
    const int job = i / o.pods_per_job;
    const std::string name = absl::StrCat("job-", job, "-worker-", i % o.pods_per_job);
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"namespace", ns},
                  {"labels",
                   {{coach::reconcile::kLabelOperatorName, "pytorchjob-controller"},
                    {coach::reconcile::kLabelJobName, absl::StrCat("job-", job)},
                    {coach::reconcile::kLabelReplicaType, "worker"},
                    {coach::reconcile::kLabelReplicaIndex, absl::StrCat(i % o.pods_per_job)}}}}},
                {"spec", {{"containers", {{{"name", "pytorch"}, {"image", "x"}}}}}},
                {"status", {{"phase", "Running"}}}};
    auto created = api.Create(coach::kubeclient::resources::Pods(), ns, pod);
    if (!created.ok()) {
      std::fprintf(stderr, "create pod: %s\n", created.status().ToString().c_str());
      return 1;
    }
    tokens << ns << " " << name << " "
           << api.Issue(ns, "default", name, coach::kubeclient::UidOf(*created),
                        {coach::server::kProgressAudience}, expires)
           << "\n";
  }
  coach::backend::kube::KubeBackendOptions backend_options;
  backend_options.client = &api;
  backend_options.namespaces = {ns};
  auto backend = coach::backend::kube::KubeBackend::Create(backend_options);
  if (!backend.ok()) return 1;
  std::atomic<int64_t> passes_asked{0};
  (*backend)->SetChangeCallback([&](const std::string&, const std::string&) { ++passes_asked; });
  if (absl::Status s = (*backend)->Start(); !s.ok()) {
    std::fprintf(stderr, "backend: %s\n", s.ToString().c_str());
    return 1;
  }
  coach::server::PodTokenAuth pod_tokens(&api);
  coach::server::ProgressIntake intake(&pod_tokens, backend->get());
  // Only ReportProgress is called: the job service is never reached.
  coach::server::TrainingServiceImpl service(nullptr, coach::server::TokenAuth(""));
  service.SetProgressIntake(&intake);
  coach::server::TrainingServiceImpl floor_service(nullptr, coach::server::TokenAuth(""));
  coach::server::GrpcServerOptions grpc_options;
  grpc_options.listen = "127.0.0.1:0";
  auto server = coach::server::GrpcServer::Start(&service, grpc_options);
  auto floor_server = coach::server::GrpcServer::Start(&floor_service, grpc_options);
  if (!server.ok() || !floor_server.ok()) return 1;
  malloc_trim(0);
  const double rss0 = RssMiB(), heap0 = HeapMiB();

  const std::string token_file = absl::StrCat("/tmp/progress_bench_tokens_", getpid());
  std::ofstream(token_file) << tokens.str();
  int out[2];
  if (pipe(out) != 0) return 1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<std::string> args = {self,           "--pods-client",
                                   "--pods",       absl::StrCat(o.pods),
                                   "--interval",   absl::StrCat(o.interval_s),
                                   "--seconds",    absl::StrCat(o.seconds),
                                   "--threads",    absl::StrCat(o.threads),
                                   "--port",       absl::StrCat((*server)->port()),
                                   "--floor-port", absl::StrCat((*floor_server)->port()),
                                   "--tokens",     token_file};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (posix_spawn(&child, self, &actions, nullptr, argv.data(), environ) != 0) return 1;
  close(out[1]);
  FILE* lines = fdopen(out[0], "r");
  std::map<std::string, Phase> phases;
  double rss1 = 0, heap1 = 0;
  size_t book = 0;
  int64_t asked0 = 0, asked1 = 0;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), lines) != nullptr) {
    std::vector<std::string> f =
        absl::StrSplit(absl::string_view(buf).substr(0, strlen(buf) - 1), ' ');
    if (f.size() < 2) continue;
    Phase& p = phases[f[1]];
    if (f[0] == "begin") {
      p.cpu0 = CpuSeconds();
      p.wall0 = WallSeconds();
      if (f[1] == "steady") asked0 = passes_asked.load();
    } else if (f[0] == "end" && f.size() == 6) {
      p.cpu1 = CpuSeconds();
      p.wall1 = WallSeconds();
      (void)absl::SimpleAtoi(f[2], &p.ok);
      (void)absl::SimpleAtoi(f[3], &p.accepted);
      (void)absl::SimpleAtoi(f[4], &p.failed);
      (void)absl::SimpleAtoi(f[5], &p.late_ms);
      if (f[1] == "steady") {
        asked1 = passes_asked.load();
        rss1 = RssMiB();
        heap1 = HeapMiB();
        book = (*backend)->ProgressEntries();
      }
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::remove(token_file.c_str());

  // The logic alone, without gRPC: Report() straight on the intake, a fresh PodTokenAuth (its
  // memory is the token cache's), rounds a second apart so that the book keeps each report.
  std::vector<std::pair<std::string, coach::api::v1::ReportProgressRequest>> direct;
  for (absl::string_view line : absl::StrSplit(tokens.str(), '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    coach::api::v1::ReportProgressRequest r;
    r.set_namespace_(f[0]);
    r.set_pod(f[1]);
    auto& m = *r.mutable_metrics();
    m["loss"] = 0.5;
    m["lr"] = 3e-4;
    m["grad_norm"] = 0.5;
    m["tokens_per_second"] = 12345.0;
    direct.emplace_back("Bearer " + f[2], std::move(r));
  }
  malloc_trim(0);
  const double heap_auth0 = HeapMiB();
  coach::server::PodTokenAuth direct_tokens(&api);
  coach::server::ProgressIntake direct_intake(&direct_tokens, backend->get());
  for (auto& [header, request] : direct) (void)direct_intake.Report(&header, request);
  const double heap_auth1 = HeapMiB();
  double direct_cpu = 0;
  int64_t direct_calls = 0, direct_kept = 0;
  for (int round = 0; round < 3; ++round) {
    absl::SleepFor(absl::Milliseconds(1100));
    const double c0 = CpuSeconds();
    for (auto& [header, request] : direct) {
      request.set_step(100000 + round);
      absl::StatusOr<coach::api::v1::ReportProgressResponse> kept =
          direct_intake.Report(&header, request);
      direct_kept += kept.ok() && kept->accepted();
      ++direct_calls;
    }
    direct_cpu += CpuSeconds() - c0;
  }
  double book_kib = 0;
  // The book's own memory: a fresh one filled with every pod's report.
  malloc_trim(0);
  const double heap_book0 = HeapMiB();
  {
    coach::backend::kube::ProgressBook fresh_book;
    coach::backend::ProgressReport report;
    report.step = 100;
    report.metrics = {{"loss", 0.5}, {"lr", 3e-4}, {"grad_norm", 0.5}, {"tokens_per_second", 1.0}};
    for (auto& [header, request] : direct) {
      (void)fresh_book.Record(absl::StrCat(request.namespace_(), "/", request.pod()),
                              "0123456789abcdef0123456789abcdef", "bench/job-000", report,
                              absl::Now());
    }
    const double heap_book1 = HeapMiB();
    book_kib = (heap_book1 - heap_book0) * 1024 / o.pods;
  }
  const Phase& first = phases["first"];
  const Phase& steady = phases["steady"];
  const Phase& floor = phases["floor"];
  const double steady_wall = steady.wall1 - steady.wall0;
  std::printf(
      "progress reports: %d pods (%d jobs of %d), one report each every %.1f s, %.0f s "
      "measured; load %s",
      o.pods, (o.pods + o.pods_per_job - 1) / o.pods_per_job, o.pods_per_job, o.interval_s,
      steady_wall, "");
  {
    std::ifstream load("/proc/loadavg");
    std::string l1;
    load >> l1;
    std::printf("%s (1 min)\n", l1.c_str());
  }
  std::printf(
      "  first report of each pod (a TokenReview each): %.1f us CPU per report "
      "(%lld reports, %lld failed)\n",
      first.CpuUsPerCall(), static_cast<long long>(first.ok), static_cast<long long>(first.failed));
  std::printf(
      "  steady: %.1f reports/s, %.1f us CPU per report, %.2f%% of one core "
      "(%lld reports, %lld kept, %lld failed, latest start %lld ms late)\n",
      steady.ok / steady_wall, steady.CpuUsPerCall(),
      100 * (steady.cpu1 - steady.cpu0) / steady_wall, static_cast<long long>(steady.ok),
      static_cast<long long>(steady.accepted), static_cast<long long>(steady.failed),
      static_cast<long long>(steady.late_ms));
  std::printf("  floor (the same calls, answered UNIMPLEMENTED at once): %.1f us CPU per call\n",
              floor.CpuUsPerCall());
  std::printf("  report / floor: x%.2f\n",
              floor.CpuUsPerCall() > 0 ? steady.CpuUsPerCall() / floor.CpuUsPerCall() : 0);
  std::printf(
      "  reconcile passes asked for: %.2f /s (%lld in the steady phase, %d jobs; at most "
      "one per job per 5 s)\n",
      (asked1 - asked0) / steady_wall, static_cast<long long>(asked1 - asked0),
      (o.pods + o.pods_per_job - 1) / o.pods_per_job);
  std::printf(
      "  memory: RSS %.1f -> %.1f MiB, malloc'd %.1f -> %.1f MiB: %.2f KiB RSS, %.2f KiB "
      "malloc'd per reporting pod (book: %zu pods; token reviews %d)\n",
      rss0, rss1, heap0, heap1, (rss1 - rss0) * 1024 / o.pods, (heap1 - heap0) * 1024 / o.pods,
      book, api.reviews());
  std::printf(
      "  without gRPC: %.2f us CPU per report (%lld calls, %lld kept); token cache "
      "%.2f KiB and progress book %.2f KiB per pod\n",
      direct_calls > 0 ? direct_cpu * 1e6 / direct_calls : 0, static_cast<long long>(direct_calls),
      static_cast<long long>(direct_kept), (heap_auth1 - heap_auth0) * 1024 / o.pods, book_kib);
  (*server)->Shutdown(absl::Seconds(1));
  (*floor_server)->Shutdown(absl::Seconds(1));
  (*backend)->Stop();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string> rest;
  const bool client = argc > 1 && std::string(argv[1]) == "--pods-client";
  if (!ParseArgs(argc, argv, client ? 2 : 1, &o, &rest)) {
    std::fprintf(stderr,
                 "usage: progress_bench [--pods N] [--interval S] [--seconds S] "
                 "[--pods-per-job K] [--threads T]\n");
    return 2;
  }
  if (client) return Pods(o, rest);
  return Operator(o, "/proc/self/exe");
}
