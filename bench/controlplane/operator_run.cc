#include "bench/controlplane/operator_run.h"

#include <unistd.h>

#include <iostream>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "bench/controlplane/capture.h"
#include "bench/controlplane/timed_run.h"
#include "bench/controlplane/watch_counter.h"
#include "bench/controlplane/workload.h"
#include "bench/local/bench_util.h"

namespace coach::bench::controlplane {
namespace {

// The operator's CPU and memory, added up over its processes; a process that is gone counts 0.
ProcUsage UsageOf(const OperatorUnderTest& op) {
  ProcUsage sum;
  for (const pid_t pid : op.pids()) {
    const ProcUsage u = ReadProcUsage(pid).value_or(ProcUsage{});
    sum.cpu_seconds += u.cpu_seconds;
    sum.vm_hwm_kb += u.vm_hwm_kb;
    sum.vm_rss_kb += u.vm_rss_kb;
  }
  return sum;
}

// Sum of every series of a Prometheus metric (name exactly) whose labels contain `series`
// ("": every series).
double MetricSum(const std::string& text, const std::string& name, const std::string& series) {
  double sum = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name)) continue;
    const absl::string_view rest = line.substr(name.size());
    if (rest.empty() || (rest[0] != ' ' && rest[0] != '{')) continue;
    if (!series.empty() && !absl::StrContains(rest.substr(0, rest.rfind(' ')), series)) continue;
    const size_t space = line.rfind(' ');
    double v = 0;
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &v)) sum += v;
  }
  return sum;
}

}  // namespace

SpeedResult RunOperator(const Flags& f, kubeclient::RestKubeClient* client,
                        Installation* installation, OperatorKind kind, const std::string& ns,
                        const std::vector<std::string>& extra, const std::string& label, int jobs,
                        std::vector<Item>* captured) {
  SpeedResult r;
  const bool upstream_webhook = installation != nullptr && kind == OperatorKind::kUpstream;
  if (installation != nullptr) {
    if (auto s = installation->UseCrds(kind); !s.ok()) {
      std::cerr << "CRDs for " << label << ": " << s << "\n";
      return r;
    }
    if (upstream_webhook) {
      if (auto s = installation->InstallWebhook(); !s.ok()) {
        std::cerr << "upstream's webhook configuration: " << s << "\n";
        return r;
      }
    }
  }
  absl::Cleanup remove_webhook = [&] {
    if (upstream_webhook) {
      if (auto s = installation->RemoveWebhook(); !s.ok()) std::cerr << "webhook: " << s << "\n";
    }
  };
  if (auto s = CreateNamespace(client, ns); !s.ok()) {
    std::cerr << "namespace " << ns << ": " << s << "\n";
    return r;
  }
  OperatorConfig config;
  config.kind = kind;
  config.binary = kind == OperatorKind::kCoach             ? f.operator_path
                  : kind == OperatorKind::kUpstreamTrainer ? f.upstream_trainer
                                                           : f.upstream_path;
  config.kubeconfig = f.kubeconfig;
  config.extra = extra;
  config.log_dir = f.log_dir;
  config.label = label;
  config.webhook_port = f.upstream_webhook_port;
  auto op = StartOperator(config, 120);
  if (!op.ok()) {
    std::cerr << op.status() << "\n";
    DeleteNamespace(client, ns);
    return r;
  }
  r.ready_after = (*op)->ready_after();
  if (upstream_webhook) {
    if (auto s = installation->ProbeWebhook(ns); !s.ok()) {
      std::cerr << "upstream's webhook: " << s << "\n";
      (*op)->Stop();
      DeleteNamespace(client, ns);
      return r;
    }
    r.webhook_refused = true;
  }
  const size_t target = static_cast<size_t>(jobs) * f.replicas;
  // A TrainJob has one headless Service (named after it); a PyTorchJob one per replica.
  const size_t svc_target = f.train_jobs ? static_cast<size_t>(jobs) : target;
  {
    // TrainJobs: upstream writes no condition while a job runs, so there is no end state to
    // time by the status.
    TimedRun run(client, TestenvDir(f), ns, target, svc_target,
                 f.train_jobs ? TrainJobs() : PyTorchJobs(), static_cast<size_t>(jobs));
    const ProcUsage before = UsageOf(**op);
    const double t0 = run.Start();
    const int failed = CreateAll(client, ns,
                                 f.train_jobs ? TrainJobItems(ns, jobs, f.replicas, f.schedule)
                                              : PyTorchJobItems(ns, jobs, f.replicas, f.schedule),
                                 f.client_threads);
    r.submit_s = NowS() - t0;
    if (failed > 0) std::cerr << failed << " job POSTs failed\n";
    const bool ok = run.WaitForObjects(t0 + f.timeout_s);
    if (!f.train_jobs && ok) run.WaitForStatuses(NowS() + 30);
    const ProcUsage at = UsageOf(**op);
    const std::string metrics = (*op)->Metrics();
    r.passes = MetricSum(metrics, (*op)->PassesMetric(), (*op)->PassesSeries());
    if (r.passes > 0) {
      r.pass_mean_ms =
          1000 * MetricSum(metrics, (*op)->PassSecondsMetric(), (*op)->PassesSeries()) / r.passes;
    }
    run.Finish(ok, &r);
    r.cpu_s = at.cpu_seconds - before.cpu_seconds;
    usleep(static_cast<useconds_t>(f.settle_s * 1e6));
    const ProcUsage settled = UsageOf(**op);
    r.cpu_settled_s = settled.cpu_seconds - before.cpu_seconds;
    r.hwm_kb = settled.vm_hwm_kb;
    r.rss_kb = settled.vm_rss_kb;
  }
  if (captured != nullptr) *captured = Capture(client, ns);
  (*op)->Stop();
  std::move(remove_webhook).Invoke();
  DeleteNamespace(client, ns);
  return r;
}

SpeedResult RunCoach(const Flags& f, kubeclient::RestKubeClient* client, const std::string& ns,
                     const std::vector<std::string>& extra, const std::string& label, int jobs,
                     std::vector<Item>* captured) {
  return RunOperator(f, client, nullptr, OperatorKind::kCoach, ns, extra, label, jobs, captured);
}

}  // namespace coach::bench::controlplane
