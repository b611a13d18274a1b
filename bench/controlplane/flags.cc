#include "bench/controlplane/flags.h"

#include <filesystem>

namespace coach::bench::controlplane {

void AddFlags(CLI::App& app, Flags* f) {
  app.add_option("--kubeconfig", f->kubeconfig, "admin kubeconfig of the cluster (tools/testenv)")
      ->required();
  app.add_option("--operator", f->operator_path, "coach-operator binary")->required();
  app.add_option("--jobs", f->jobs, "PyTorchJobs submitted at once")->capture_default_str();
  app.add_option("--replicas", f->replicas, "replicas per job (1 Master + R-1 Workers)")
      ->capture_default_str();
  app.add_option("--client-threads", f->client_threads, "threads of the harness's unlimited client")
      ->capture_default_str();
  app.add_option("--compare-qps", f->compare_qps,
                 "the second operator run's fixed --kube-api-qps (upstream's default; 0: skip it)")
      ->capture_default_str();
  app.add_option("--compare-burst", f->compare_burst, "the second operator run's --kube-api-burst")
      ->capture_default_str();
  app.add_option("--unrelated", f->unrelated, "memory: ConfigMaps and Pods not owned by coach")
      ->capture_default_str();
  app.add_option("--memory-jobs", f->memory_jobs,
                 "memory: jobs the operator owns in runs (a) and (b)")
      ->capture_default_str();
  app.add_flag(
      "--schedule", f->schedule,
      "speed: let kube-scheduler bind the pods and kwok run them (their work then shares the CPUs "
      "with the API server inside the measurement); default: pods name no scheduler and stay "
      "Pending");
  app.add_option("--rounds", f->rounds,
                 "speed: rounds of coach + both baselines; the summary is their median")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--timeout", f->timeout_s, "seconds to wait for every object")
      ->capture_default_str();
  app.add_option("--settle", f->settle_s, "seconds after the last object before RSS is read")
      ->capture_default_str();
  app.add_option("--only", f->only,
                 "speed | memory | upstream (coach side by side with the upstream operator; "
                 "bench/upstream/run.sh) | trainjob (coach side by side with upstream Trainer "
                 "v2 and JobSet; bench/upstream/run.sh --kind trainjob)");
  app.add_option("--coach-flag", f->coach_flags,
                 "trainjob: a flag of one more coach row (repeat for several)");
  app.add_option("--upstream-trainer", f->upstream_trainer,
                 "trainjob: bench/upstream/upstream-trainer (starts and stops Trainer and JobSet)");
  app.add_option("--upstream", f->upstream_path, "upstream: the training-operator binary");
  app.add_option("--upstream-crds", f->upstream_crds, "upstream: folder of its CRDs");
  app.add_option("--coach-crds", f->coach_crds, "upstream: folder of coach's CRDs");
  app.add_option("--kubectl", f->kubectl, "upstream: kubectl, to apply either set of CRDs");
  app.add_option("--upstream-webhook", f->upstream_webhook,
                 "upstream: its ValidatingWebhookConfiguration (JSON, URLs on loopback)");
  app.add_option("--upstream-webhook-port", f->upstream_webhook_port,
                 "upstream: the port its webhook server listens on (the configuration's URLs)");
  app.add_option("--upstream-raised-qps", f->upstream_raised_qps,
                 "upstream: --kube-api-qps of the \"limits raised\" row")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--upstream-raised-burst", f->upstream_raised_burst,
                 "upstream: --kube-api-burst of the \"limits raised\" row")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--unrelated-pods", f->unrelated_pods,
                 "upstream: memory with these many unrelated pods in the cluster, ascending")
      ->capture_default_str();
  app.add_flag("--skip-speed", f->skip_speed, "upstream: only the memory part");
  app.add_flag("--skip-memory", f->skip_memory, "upstream: only the speed part");
  app.add_option("--log-dir", f->log_dir, "where the operators' logs go")->capture_default_str();
}

std::string TestenvDir(const Flags& f) {
  return std::filesystem::path(f.kubeconfig).parent_path().string();
}

}  // namespace coach::bench::controlplane
