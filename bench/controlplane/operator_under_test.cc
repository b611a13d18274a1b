#include "bench/controlplane/operator_under_test.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/http/curl_transport.h"
#include "e2e/common/child_process.h"
#include "e2e/common/loopback_operator.h"

namespace coach::bench {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// coach-operator --backend=kube through e2e's LoopbackOperator, with a state directory of its
// own (removed on Stop).
class CoachOperator : public OperatorUnderTest {
 public:
  static absl::StatusOr<std::unique_ptr<OperatorUnderTest>> Start(const OperatorConfig& c,
                                                                  double timeout_s) {
    char tmpl[] = "/tmp/coach-bench-cp-state.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp");
    std::vector<std::string> flags = {"--backend=kube", "--kubeconfig=" + c.kubeconfig,
                                      std::string("--state-dir=") + tmpl, "--log-level=warn"};
    flags.insert(flags.end(), c.extra.begin(), c.extra.end());
    auto op = std::unique_ptr<CoachOperator>(new CoachOperator(tmpl));
    op->name_ = "coach-bench-cp-" + c.label;
    op->log_dir_ = c.log_dir;
    op->process_ = std::make_unique<e2e::LoopbackOperator>(op->name_, c.log_dir, std::move(flags),
                                                           e2e::ChildEnv({}, {}));
    op->process_->set_binary(c.binary);
    if (absl::Status started = op->process_->Start(absl::Seconds(timeout_s)); !started.ok()) {
      return started;
    }
    return std::unique_ptr<OperatorUnderTest>(std::move(op));
  }
  ~CoachOperator() override { Stop(); }

  pid_t pid() const override { return process_->pid(); }
  double ready_after() const override { return absl::ToDoubleSeconds(process_->ready_after()); }
  std::string Metrics() const override { return HttpGet(process_->http_port(), "/metrics").second; }
  std::string PassesMetric() const override { return "coach_reconcile_duration_seconds_count"; }
  std::string PassSecondsMetric() const override { return "coach_reconcile_duration_seconds_sum"; }
  std::string PassesSeries() const override { return ""; }
  std::string log_path() const override { return absl::StrCat(log_dir_, "/", name_, "-1.log"); }
  void Stop() override {
    if (process_ != nullptr && process_->running()) process_->Stop().IgnoreError();
    std::error_code ec;
    std::filesystem::remove_all(state_dir_, ec);
  }

 private:
  explicit CoachOperator(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  std::string state_dir_;
  std::string name_;
  std::string log_dir_;
  std::unique_ptr<e2e::LoopbackOperator> process_;
};

// The upstream training-operator: as its Deployment runs it (no flags but the client limits
// given), except that its metrics and probe endpoints and its webhook server get free loopback
// ports, and it reads the cluster from the kubeconfig. Leader election stays off (its default).
class UpstreamOperator : public OperatorUnderTest {
 public:
  static absl::StatusOr<std::unique_ptr<OperatorUnderTest>> Start(const OperatorConfig& c,
                                                                  double timeout_s) {
    if (c.webhook_port <= 0 || c.webhook_port > 65535) {
      return absl::InvalidArgumentError("upstream operator: webhook_port is not a TCP port");
    }
    auto op = std::unique_ptr<UpstreamOperator>(new UpstreamOperator());
    op->metrics_port_ = e2e::FreePort();
    op->probe_port_ = e2e::FreePort();
    while (op->probe_port_ == op->metrics_port_) op->probe_port_ = e2e::FreePort();
    op->log_ = absl::StrCat(c.log_dir, "/coach-bench-up-", c.label, ".log");
    std::error_code ec;
    std::filesystem::remove(op->log_, ec);
    std::vector<std::string> argv = {
        c.binary,
        absl::StrCat("--metrics-bind-address=127.0.0.1:", op->metrics_port_),
        absl::StrCat("--health-probe-bind-address=127.0.0.1:", op->probe_port_),
        absl::StrCat("--webhook-server-port=", c.webhook_port),
    };
    argv.insert(argv.end(), c.extra.begin(), c.extra.end());
    // MY_POD_NAMESPACE: what the Deployment's downward API gives it; it finds its Secret there.
    const std::vector<std::string> env = e2e::ChildEnv(
        {"KUBECONFIG=" + c.kubeconfig, "MY_POD_NAMESPACE=" + c.upstream_namespace}, {"COACH_"});
    const absl::Time spawned = absl::Now();
    op->pid_ = e2e::Spawn(argv, env, "", op->log_, op->log_, /*die_with_parent=*/true);
    if (op->pid_ < 0) return absl::InternalError("fork failed");
    const absl::Time end = spawned + absl::Seconds(timeout_s);
    while (!op->Ready()) {
      int status = 0;
      if (waitpid(op->pid_, &status, WNOHANG) == op->pid_) {
        op->pid_ = -1;
        return absl::UnavailableError(absl::StrCat("upstream operator exited (status ", status,
                                                   ") before it was ready; log ", op->log_));
      }
      if (absl::Now() >= end) {
        op->Stop();
        return absl::DeadlineExceededError(
            absl::StrCat("upstream operator not ready in time; log ", op->log_));
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    op->ready_after_ = absl::ToDoubleSeconds(absl::Now() - spawned);
    return std::unique_ptr<OperatorUnderTest>(std::move(op));
  }
  ~UpstreamOperator() override { Stop(); }

  pid_t pid() const override { return pid_; }
  double ready_after() const override { return ready_after_; }
  std::string Metrics() const override { return HttpGet(metrics_port_, "/metrics").second; }
  std::string PassesMetric() const override {
    return "controller_runtime_reconcile_time_seconds_count";
  }
  std::string PassSecondsMetric() const override {
    return "controller_runtime_reconcile_time_seconds_sum";
  }
  // Its PyTorchJob controller's passes (not the cert rotator's or the other job kinds').
  std::string PassesSeries() const override { return "controller=\"pytorchjob-controller\""; }
  std::string log_path() const override { return log_; }
  void Stop() override {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    if (!e2e::WaitPid(pid_, absl::Seconds(15))) e2e::KillAndReap(pid_);
    pid_ = -1;
  }

 private:
  UpstreamOperator() = default;

  // /readyz answers once its certificates are in place and its webhook server listens; its
  // controllers start after that, each once its caches have synced ("Starting workers").
  bool Ready() const {
    if (!e2e::HttpReady(probe_port_)) return false;
    for (absl::string_view line : absl::StrSplit(ReadFile(log_), '\n')) {
      if (absl::StrContains(line, "Starting workers") &&
          absl::StrContains(line, "\"pytorchjob-controller\"")) {
        return true;
      }
    }
    return false;
  }

  pid_t pid_ = -1;
  int metrics_port_ = 0;
  int probe_port_ = 0;
  std::string log_;
  double ready_after_ = 0;
};

// Upstream Trainer v2 and JobSet: `upstream-trainer up` installs their CRDs, starts both managers
// at their shipped configurations (loopback ports, leader election and their own certificate
// management off) and registers their webhooks once both are ready; `down` removes the webhooks
// and stops them. Their metrics are served over HTTPS with authentication, so no passes are read.
class UpstreamTrainer : public OperatorUnderTest {
 public:
  static absl::StatusOr<std::unique_ptr<OperatorUnderTest>> Start(const OperatorConfig& c,
                                                                  double timeout_s) {
    auto op = std::unique_ptr<UpstreamTrainer>(new UpstreamTrainer());
    op->script_ = c.binary;
    op->kubeconfig_ = c.kubeconfig;
    op->dir_ = absl::StrCat(c.log_dir, "/coach-bench-up-", c.label);
    std::error_code ec;
    std::filesystem::remove_all(op->dir_, ec);
    const absl::Time spawned = absl::Now();
    const e2e::CommandResult r = e2e::RunProcess(
        {c.binary, "up", "--kubeconfig", c.kubeconfig, "--dir", op->dir_},
        e2e::ChildEnv({}, {"COACH_"}), "", op->dir_ + ".up", absl::Seconds(timeout_s));
    if (r.exit_code != 0) {
      op->Stop();
      return absl::UnavailableError(absl::StrCat("upstream-trainer up exited ", r.exit_code, ": ",
                                                 r.err.substr(0, 2000), " (logs in ", op->dir_,
                                                 ")"));
    }
    for (const char* name : {"trainer", "jobset"}) {
      pid_t pid = 0;
      std::ifstream in(absl::StrCat(op->dir_, "/", name, ".pid"));
      if (!(in >> pid) || pid <= 0) {
        op->Stop();
        return absl::InternalError(absl::StrCat("upstream-trainer up left no ", name, ".pid"));
      }
      op->pids_.push_back(pid);
    }
    op->ready_after_ = absl::ToDoubleSeconds(absl::Now() - spawned);
    return std::unique_ptr<OperatorUnderTest>(std::move(op));
  }
  ~UpstreamTrainer() override { Stop(); }

  pid_t pid() const override { return pids_.empty() ? -1 : pids_[0]; }
  std::vector<pid_t> pids() const override { return pids_; }
  double ready_after() const override { return ready_after_; }
  std::string Metrics() const override { return ""; }
  std::string PassesMetric() const override { return "-"; }
  std::string PassSecondsMetric() const override { return "-"; }
  std::string PassesSeries() const override { return ""; }
  std::string log_path() const override { return dir_ + "/trainer.log"; }
  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    (void)e2e::RunProcess({script_, "down", "--kubeconfig", kubeconfig_, "--dir", dir_},
                          e2e::ChildEnv({}, {"COACH_"}), "", dir_ + ".down", absl::Seconds(60));
  }

 private:
  UpstreamTrainer() = default;

  std::string script_;
  std::string kubeconfig_;
  std::string dir_;
  std::vector<pid_t> pids_;
  double ready_after_ = 0;
  bool stopped_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OperatorUnderTest>> StartOperator(const OperatorConfig& config,
                                                                 double timeout_s) {
  if (config.binary.empty()) return absl::InvalidArgumentError("operator: binary is empty");
  switch (config.kind) {
    case OperatorKind::kCoach:
      return CoachOperator::Start(config, timeout_s);
    case OperatorKind::kUpstream:
      return UpstreamOperator::Start(config, timeout_s);
    case OperatorKind::kUpstreamTrainer:
      return UpstreamTrainer::Start(config, timeout_s);
  }
  return absl::InvalidArgumentError("operator: unknown kind");
}

std::pair<long, std::string> HttpGet(int port, const std::string& path) {
  static http::Transport* const transport = http::CurlTransport::Create().value().release();
  http::Request req;
  req.url = absl::StrCat("http://127.0.0.1:", port, path);
  req.timeout = absl::Seconds(10);
  http::Result r = transport->Send(req);
  if (!r.answered()) return {0, ""};
  return {r.response.status, std::move(r.response.body)};
}

}  // namespace coach::bench
