// coach-launch: the in-pod entrypoint. Wiring only; see launch_config.h for the contract.
//
// Exit codes: the workers' (see supervisor.h); 2 for a usage or configuration error;
// 1 when a peer did not come up within --peer-timeout.

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/version/version.h"
#include "integrations/mlflow/metric_logger.h"
#include "integrations/mlflow/rest_tracking_client.h"
#include "launcher/attempt_runner.h"
#include "launcher/checkpoint_relay.h"
#include "launcher/gpu_discovery.h"
#include "launcher/host_wait.h"
#include "launcher/in_place_restarts.h"
#include "launcher/launch_config.h"
#include "launcher/metrics_tee.h"
#include "launcher/mlflow_binding_env.h"
#include "launcher/notice_hold.h"
#include "launcher/output_forwarder.h"
#include "launcher/peer_wait.h"
#include "launcher/progress_reporter.h"
#include "launcher/restart_mode.h"
#include "launcher/self_install.h"
#include "launcher/supervisor.h"
#include "launcher/worker_env.h"

extern char** environ;

namespace coach::launcher {
namespace {

constexpr char kUsage[] = R"(usage: coach-launch [flags] -- PROGRAM ARGS...
       coach-launch [flags] PROGRAM ARGS...
       coach-launch --install DIR
       coach-launch --version
       coach-launch --wait-for-host HOST [--wait-for-host HOST ...] [--peer-timeout D]
A drop-in for torchrun's static launch, reading the same PET_* variables (flags win):
  --nnodes N|N:N          PET_NNODES                   default 1
  --node-rank R           PET_NODE_RANK, RANK          required when nnodes > 1
  --nproc-per-node P      PET_NPROC_PER_NODE           auto|cpu|gpu|N, default auto
  --master-addr A         PET_MASTER_ADDR, MASTER_ADDR default 127.0.0.1 on one node
  --master-port P         PET_MASTER_PORT, MASTER_PORT default 29500 on one node
  --rdzv-id ID            PET_RDZV_ID                  TORCHELASTIC_RUN_ID, default none
  --peer-timeout D        wait this long for peers (default 300s)
  --grace-period D        SIGTERM -> SIGKILL delay (default 30s)
  --no-wait               do not wait for peers
  --no-python             run a *.py PROGRAM as given, not with python3 -u
  --log-line-prefix       COACH_LOG_LINE_PREFIX=1      prefix each output line with [rank<N>]:
  --log-line-prefix-template T                         prefix each line with T; ${rank},
                          PET_LOG_LINE_PREFIX_TEMPLATE, ${local_rank}, ${role_name} (torchrun's)
                          TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE
Workers' stdout and stderr pass through coach-launch a whole line at a time (lines over 64 KiB
in 64 KiB pieces), so lines of different workers never mix, however they were written.
Without PET_* variables or torch flags, runs PROGRAM once (single-process mode), after
waiting for the peers named by TF_CONFIG, COORDINATOR_ADDRESS, PADDLE_MASTER or MASTER_ADDR.
Exit code: the first failing worker's (128+n if killed by signal n), 2 on bad configuration,
1 when peers do not come up in time.
With COACH_MLFLOW_TRACKING_URI and COACH_MLFLOW_RUN_ID set (the operator sets both for tracked
jobs; else MLFLOW_TRACKING_URI and MLFLOW_RUN_ID), lines
  coach-metric name=<key> value=<number> [step=<int>] [timestamp=<ms>]
that the workers print on stdout (copied to stdout unchanged) and that they append to
$COACH_METRICS_FILE are logged to that run. At the end the launcher waits at most
$COACH_METRICS_FLUSH_TIMEOUT seconds (default 5) for delivery and reports what was not delivered;
$COACH_METRICS_BUFFER caps the points held while MLflow is unreachable (default 1048576).
With COACH_PROGRESS_ADDRESS, COACH_PROGRESS_TOKEN_FILE, COACH_POD_NAMESPACE and COACH_POD_NAME
set (the operator sets them for replicas that report progress), the same lines' highest step,
latest values and a steps/s estimate go to the operator at most every 2 s while they change,
with a heartbeat at least every 30 s; failures are counted, never fatal, and a failed report
goes again 2 s later.
With COACH_RESTART_MODE=InPlace as well (the operator sets it, and COACH_ATTEMPT, for a job whose
ranks restart in place; Recreate or unset: they do not), a failing worker does not end the
launcher: the others are stopped as usual, the operator is told, and when it restarts the job
the workers start again in this pod with COACH_ATTEMPT and TORCHELASTIC_RESTART_COUNT set to the
new attempt (peers are not waited for again). When the operator restarts the job while the
workers run (another pod's rank failed), they are stopped and started likewise; a heartbeat goes
every 2 s, and a report every 0.5 s while the launcher waits. It exits with the failed worker's
code (143 after such a stop) when the operator says so, answers without a word on restarts, or
says nothing within $COACH_IN_PLACE_WAIT seconds (default 60); on SIGTERM/SIGINT as always.
COACH_ATTEMPT: 0..1000000, default 0. Without progress reports InPlace is warned about and off.
With progress reports, each worker also gets COACH_CHECKPOINT_REQUEST_FILE: when the operator asks
for a checkpoint, {"id":N,"deadline_unix_ms":D} is written there, SIGUSR1 goes to a worker whose
pid is in FILE.armed (COACH_CHECKPOINT_SIGNAL=none: never; default SIGUSR1), and the workers'
answers in FILE.done ({"id":N,"step":S} or {"id":N,"error":"..."}) go back to the operator.
With COACH_NOTICE_WAIT=S as well (0..60; the operator sets 5 for jobs that restart as a whole), the
first SIGTERM is held back from the workers while the operator may still ask for a checkpoint (an
eviction): reports go every 0.25 s; it is passed on once a request is answered, the operator says
it deletes the pod itself, or S seconds pass without a request.
--wait-for-host HOST waits (up to --peer-timeout, default 300s) until every HOST resolves in
DNS, then exits 0 without running anything; 1 when one does not in time, 2 on a bad HOST.
--install DIR copies this executable to DIR/bin/coach-launch, its shared libraries to DIR/lib
and the dynamic loader to DIR/lib/ld.so, for images without them; run the copy as
  DIR/lib/ld.so --library-path DIR/lib DIR/bin/coach-launch -- PROGRAM ARGS...
)";

int CpuCount() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

EnvMap ProcessEnv() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

// The workers' metric lines, read off their stdout (and $COACH_METRICS_FILE), go to the job's
// MLflow run and, on Kubernetes, to the operator as progress reports; nullptr when neither is
// configured (training goes on either way).
struct MetricsPipeline {
  std::unique_ptr<mlflow::RestTrackingClient> client;
  std::unique_ptr<mlflow::MetricLogger> logger;
  std::unique_ptr<ProgressReporter> progress;
  std::unique_ptr<MetricsTee> tee;
  absl::Duration flush_timeout = absl::Seconds(5);
};

// The MLflow logger into `pipeline`, when configured and possible.
void StartMlflow(const EnvMap& env, MetricsPipeline& pipeline) {
  // The job's run (operator/reconcile/mlflow_env.h), else one the container names itself.
  const bool job_run = !EnvValue(env, "COACH_MLFLOW_RUN_ID").empty();
  const std::string run_id = EnvValue(env, job_run ? "COACH_MLFLOW_RUN_ID" : "MLFLOW_RUN_ID");
  const char* uri_var = job_run ? "COACH_MLFLOW_TRACKING_URI" : "MLFLOW_TRACKING_URI";
  if (EnvValue(env, uri_var).empty() || run_id.empty()) return;
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "coach-launch: metrics not logged to MLflow: %s\n", why.c_str());
  };
  absl::StatusOr<mlflow::RestTrackingOptions> options =
      mlflow::RestTrackingOptions::FromEnv([&env, uri_var](const char* name) -> const char* {
        if (std::string(name) == "MLFLOW_TRACKING_URI") name = uri_var;
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      });
  if (!options.ok()) return fail(std::string(options.status().message()));
  // The logger retries by itself; one request never holds it long.
  options->retry.max_attempts = 2;
  options->retry.initial_backoff = absl::Milliseconds(200);
  options->retry.max_backoff = absl::Seconds(1);
  options->request_timeout = absl::Seconds(5);
  options->connect_timeout = absl::Seconds(2);
  mlflow::MetricLoggerOptions logger_options;
  if (std::string b = EnvValue(env, "COACH_METRICS_BUFFER"); !b.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(b, &n) || n < 1)
      return fail("COACH_METRICS_BUFFER: not a positive integer");
    logger_options.max_buffered_points = n;
  }
  if (std::string t = EnvValue(env, "COACH_METRICS_FLUSH_TIMEOUT"); !t.empty()) {
    double s = 0;
    if (!absl::SimpleAtod(t, &s) || s < 0) return fail("COACH_METRICS_FLUSH_TIMEOUT: not seconds");
    pipeline.flush_timeout = absl::Seconds(s);
  }
  absl::StatusOr<std::unique_ptr<mlflow::RestTrackingClient>> client =
      mlflow::RestTrackingClient::Create(*options);
  if (!client.ok()) return fail(std::string(client.status().message()));
  logger_options.max_backoff = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<mlflow::MetricLogger>> logger =
      mlflow::MetricLogger::Create(client->get(), run_id, logger_options);
  if (!logger.ok()) return fail(std::string(logger.status().message()));
  pipeline.client = std::move(client).value();
  pipeline.logger = std::move(logger).value();
}

std::unique_ptr<MetricsPipeline> StartMetrics(const EnvMap& env, OutputForwarder* out) {
  auto pipeline = std::make_unique<MetricsPipeline>();
  StartMlflow(env, *pipeline);
  auto log = [out](const std::string& line) { out->Write(STDERR_FILENO, line + "\n"); };
  absl::StatusOr<std::unique_ptr<ProgressReporter>> progress = ProgressReporter::FromEnv(env, log);
  if (!progress.ok()) {
    std::fprintf(stderr, "coach-launch: progress not reported to the operator: %s\n",
                 std::string(progress.status().message()).c_str());
  } else {
    pipeline->progress = std::move(progress).value();
  }
  if (pipeline->logger == nullptr && pipeline->progress == nullptr) return nullptr;
  mlflow::MetricLogger* logger = pipeline->logger.get();
  ProgressReporter* reporter = pipeline->progress.get();
  pipeline->tee = std::make_unique<MetricsTee>(
      [logger, reporter](const metrics::MetricLine& m, int64_t now_ms) {
        if (logger != nullptr)
          logger->Log(m.name, m.value, m.step, m.timestamp_ms.value_or(now_ms));
        if (reporter != nullptr) reporter->OnMetric(m);
      },
      log);
  if (std::string file = EnvValue(env, "COACH_METRICS_FILE"); !file.empty()) {
    pipeline->tee->WatchFile(file);
  }
  if (reporter != nullptr) reporter->Start();
  return pipeline;
}

void FinishMetrics(MetricsPipeline& p) {
  p.tee->Finish();
  if (p.progress != nullptr) {
    // The final step reaches the operator, at most 2 s later.
    p.progress->Finish(absl::Seconds(2));
    const ProgressReporterStats s = p.progress->stats();
    std::fprintf(stderr,
                 "coach-launch: progress: %lld report(s) to the operator, %lld kept, %lld "
                 "failed%s\n",
                 static_cast<long long>(s.sent), static_cast<long long>(s.accepted),
                 static_cast<long long>(s.failed),
                 s.stopped ? " (the operator takes no reports)" : "");
  }
  if (p.logger == nullptr) return;
  mlflow::MetricLoggerStats s = p.logger->Shutdown(p.flush_timeout);
  std::fprintf(stderr,
               "coach-launch: metrics: %lld line(s), %lld delivered to MLflow run %s, %lld not "
               "delivered (%lld dropped, %lld rejected, %lld left at exit), %lld malformed\n",
               static_cast<long long>(p.tee->metric_lines()), static_cast<long long>(s.delivered),
               p.logger->run_id().c_str(), static_cast<long long>(s.undelivered()),
               static_cast<long long>(s.dropped), static_cast<long long>(s.rejected),
               static_cast<long long>(s.lost_at_shutdown),
               static_cast<long long>(p.tee->malformed_lines()));
}

// Checkpoint requests from the operator, passed on to the workers (checkpoint_relay.h); nullptr
// when no directory can be made for them (training goes on without).
std::unique_ptr<CheckpointRelay> StartCheckpointRelay(
    const EnvMap& env, int workers, bool signal, ProgressReporter& reporter,
    WorkerSignals& worker_signals, const std::function<void(const std::string&)>& log) {
  absl::StatusOr<std::string> dir = MakeCheckpointDir(env);
  if (!dir.ok()) {
    log(absl::StrCat("coach-launch: checkpoint requests are not passed on to the workers: ",
                     dir.status().message()));
    return nullptr;
  }
  CheckpointRelayOptions options;
  options.dir = *dir;
  options.workers = workers;
  options.signal = signal;
  options.signal_worker = [&worker_signals](int local_rank, pid_t pid, int64_t id) {
    worker_signals.Send(local_rank, pid, SIGUSR1, absl::StrCat("checkpoint request ", id));
  };
  options.report = [&reporter](const api::v1::CheckpointReport& report) {
    reporter.SetCheckpointReport(report);
  };
  options.log = log;
  auto relay = std::make_unique<CheckpointRelay>(std::move(options));
  CheckpointRelay* r = relay.get();
  reporter.SetCheckpointRequestCallback(
      [r](const api::v1::CheckpointRequest& request) { r->OnRequest(request); });
  relay->Start();
  return relay;
}

// DNS-wait mode: see host_wait.h.
int WaitForHostsMain(const std::vector<std::string>& args) {
  absl::StatusOr<HostWaitConfig> config = ParseHostWaitConfig(args);
  if (!config.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  HostWaitOptions options;
  options.timeout = config->timeout;
  absl::Status waited = WaitForHosts(config->hosts, options);
  if (!waited.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(waited.message()).c_str());
    return 1;
  }
  return 0;
}

// Each worker's stdout and stderr is a pipe (two ends each) while the forwarder runs; the
// default soft limit of 1024 descriptors would not cover a few hundred workers.
void RaiseFdLimit(int workers) {
  rlimit lim{};
  const rlim_t need = static_cast<rlim_t>(workers) * 4 + 64;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= need) return;
  lim.rlim_cur = std::min(need, lim.rlim_max);
  setrlimit(RLIMIT_NOFILE, &lim);
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.empty() && args[0] == "--version") {
    std::printf("coach-launch %s\n", kVersion);
    return 0;
  }
  if (!args.empty() && args[0] == "--install") {
    if (args.size() != 2 || args[1].empty()) {
      std::fputs("coach-launch: usage: coach-launch --install DIR\n", stderr);
      return 2;
    }
    absl::Status installed = SelfInstall(args[1]);
    if (!installed.ok()) {
      std::fprintf(stderr, "coach-launch: --install: %s\n",
                   std::string(installed.message()).c_str());
      return 1;
    }
    return 0;
  }
  if (IsHostWaitInvocation(args)) return WaitForHostsMain(args);
  std::string binding_warning;
  const EnvMap env = WithMlflowBinding(ProcessEnv(), &binding_warning);
  if (!binding_warning.empty()) std::fprintf(stderr, "coach-launch: %s\n", binding_warning.c_str());
  std::optional<std::string> visible;
  if (auto it = env.find("CUDA_VISIBLE_DEVICES"); it != env.end()) visible = it->second;
  DevNodeGpuDiscovery gpus("/dev", visible);
  absl::StatusOr<LaunchConfig> config = ParseLaunchConfig(args, env, gpus, CpuCount());
  if (!config.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<RestartConfig> restart = ParseRestartConfig(env);
  if (!restart.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(restart.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<bool> checkpoint_signal = ParseCheckpointSignal(env);
  if (!checkpoint_signal.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n",
                 std::string(checkpoint_signal.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<absl::Duration> notice_wait = ParseNoticeWait(env);
  if (!notice_wait.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(notice_wait.status().message()).c_str());
    return 2;
  }
  if (config->wait_for_peers && !config->peers.empty()) {
    PeerWaitOptions wait;
    wait.timeout = config->peer_timeout;
    absl::Status waited = WaitForPeers(config->peers, wait);
    if (!waited.ok()) {
      std::fprintf(stderr, "coach-launch: %s\n", std::string(waited.message()).c_str());
      return 1;
    }
  }
  // Threads (output, metrics) come next: block the signals the supervisor waits for first, so
  // that they reach it and not a helper thread; the workers start with the original mask.
  // SIGPIPE too: a closed stdout must not kill the launcher (and with it, the workers).
  sigset_t watched, original_mask;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGTERM);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &watched, &original_mask);
  RaiseFdLimit(config->nproc_per_node);
  absl::StatusOr<std::unique_ptr<OutputForwarder>> forwarder = OutputForwarder::Create();
  if (!forwarder.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(forwarder.status().message()).c_str());
    return 1;
  }
  OutputForwarder& out = **forwarder;
  std::unique_ptr<MetricsPipeline> metrics = StartMetrics(env, &out);
  ProgressReporter* reporter = metrics != nullptr ? metrics->progress.get() : nullptr;
  const bool in_place = restart->mode == RestartMode::kInPlace && reporter != nullptr;
  if (restart->mode == RestartMode::kInPlace && !in_place) {
    std::fputs(
        "coach-launch: COACH_RESTART_MODE=InPlace, but progress is not reported to the operator "
        "(COACH_PROGRESS_ADDRESS and the rest): the ranks do not restart in place\n",
        stderr);
  }
  // The launcher's own lines go between the workers' lines, never inside one, and after what
  // the workers wrote before them (an exit line after the worker's last lines).
  auto log = [&out](const std::string& line) {
    out.Sync(absl::Seconds(1));
    out.Write(STDERR_FILENO, line + "\n");
  };
  WorkerSignals worker_signals;
  // Write alone: the relay's thread may not Sync (output_forwarder.h).
  std::unique_ptr<CheckpointRelay> checkpoints =
      reporter != nullptr
          ? StartCheckpointRelay(
                env, config->nproc_per_node, *checkpoint_signal, *reporter, worker_signals,
                [&out](const std::string& line) { out.Write(STDERR_FILENO, line + "\n"); })
          : nullptr;
  std::vector<WorkerSpec> workers;
  for (int local = 0; local < config->nproc_per_node; ++local) {
    workers.push_back(WorkerSpec{GlobalRank(*config, local), local, config->program,
                                 WorkerEnv(*config, local, env)});
    if (checkpoints != nullptr) {
      workers.back().env[kCheckpointRequestFileEnv] =
          CheckpointRequestFile(checkpoints->dir(), local);
    }
    const std::string prefix = LogLinePrefix(*config, local);
    OutputForwarder::LineCallback on_line;
    if (metrics != nullptr) {
      MetricsTee* tee = metrics->tee.get();
      on_line = [tee](absl::string_view line) { tee->OnLine(line); };
    }
    absl::StatusOr<int> stdout_fd = out.AddPipe(STDOUT_FILENO, prefix, std::move(on_line));
    absl::StatusOr<int> stderr_fd = out.AddPipe(STDERR_FILENO, prefix);
    if (!stdout_fd.ok() || !stderr_fd.ok()) {
      // Out of descriptors: better unforwarded output than no training.
      std::fprintf(
          stderr,
          "coach-launch: rank %d writes to the launcher's stdout/stderr "
          "directly (lines may mix): %s\n",
          workers.back().rank,
          std::string((stdout_fd.ok() ? stderr_fd : stdout_fd).status().message()).c_str());
      continue;
    }
    workers.back().stdout_fd = *stdout_fd;
    workers.back().stderr_fd = *stderr_fd;
  }
  if (config->mode == LaunchMode::kTorch) {
    std::fprintf(stderr,
                 "coach-launch: node %d/%d, %d worker(s), world size %d, master %s:%d: %s\n",
                 config->node_rank, config->nnodes, config->nproc_per_node,
                 config->nnodes * config->nproc_per_node, config->master_addr.c_str(),
                 config->master_port, absl::StrJoin(config->program, " ").c_str());
  }
  out.Start();
  SupervisorOptions options;
  options.grace_period = config->grace_period;
  options.child_mask = &original_mask;
  options.log = log;
  // Without requests to pass on, the supervisor has nothing to look at between signals.
  if (checkpoints != nullptr) options.signals = &worker_signals;
  std::optional<NoticeHold> notice_hold;
  if (checkpoints != nullptr && *notice_wait > absl::ZeroDuration()) {
    CheckpointRelay* relay = checkpoints.get();
    notice_hold.emplace(
        *notice_wait,
        NoticeSources{[reporter](absl::Duration every) { reporter->Hurry(every); },
                      [reporter] { return reporter->OperatorStopping(); },
                      [relay] { return relay->Busy(); }, [relay] { return relay->NewestId(); }});
    options.hold = &*notice_hold;
  }
  absl::StatusOr<int> code;
  if (in_place) {
    InPlaceRestartOptions restarts;
    restarts.first_attempt = restart->attempt;
    restarts.wait = restart->in_place_wait;
    restarts.log = options.log;
    code = RunInPlace(
        *NewProcessAttemptRunner(workers, options, [&out] { out.EndLines(absl::Seconds(1)); }),
        *reporter, restarts);
  } else {
    absl::StatusOr<SupervisionResult> result = Supervise(workers, options);
    if (result.ok()) {
      code = result->exit_code;
    } else {
      code = result.status();
    }
  }
  if (checkpoints != nullptr) {
    reporter->SetCheckpointRequestCallback(nullptr);
    checkpoints->Stop();
    // An answer the workers wrote as they ended still goes with the last report.
    checkpoints->Poll();
  }
  out.Finish(absl::Seconds(2));
  if (metrics != nullptr) FinishMetrics(*metrics);
  if (checkpoints != nullptr) RemoveCheckpointDir(checkpoints->dir());
  if (!code.ok()) {
    std::fprintf(stderr, "coach-launch: %s\n", std::string(code.status().message()).c_str());
    return 1;
  }
  return *code;
}

}  // namespace
}  // namespace coach::launcher

int main(int argc, char** argv) { return coach::launcher::Main(argc, argv); }
