#pragma once

// The benchmark's command line: every mode's settings, registered on one CLI11 app.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace coach::bench::controlplane {

struct Flags {
  std::string kubeconfig;
  std::string operator_path;
  int jobs = 50;
  int replicas = 8;
  int client_threads = 32;
  double compare_qps = 20;
  int compare_burst = 30;
  int unrelated = 2000;
  int memory_jobs = 10;
  bool schedule = false;
  int rounds = 1;
  double timeout_s = 600;
  double settle_s = 5;
  std::string only;
  std::string log_dir = "/tmp";
  // --only upstream (bench/upstream/run.sh passes these):
  std::string upstream_path;                    // training-operator binary
  std::string upstream_crds;                    // its module's CRDs
  std::string coach_crds;                       // charts/coach/crds
  std::string kubectl;                          // applies either set of CRDs
  std::string upstream_webhook;                 // its ValidatingWebhookConfiguration, JSON
  int upstream_webhook_port = 0;                // the port that configuration's URLs name
  int upstream_raised_qps = 1000;               // "limits raised": --kube-api-qps
  int upstream_raised_burst = 2000;             // and --kube-api-burst
  std::string unrelated_pods = "0,2000,10000";  // memory: unrelated pods in the cluster
  // --only trainjob: bench/upstream/upstream-trainer (starts and stops Trainer and JobSet).
  std::string upstream_trainer;
  // --only trainjob: one more coach row with these flags (what limits coach's speed).
  std::vector<std::string> coach_flags;
  bool train_jobs = false;  // --only trainjob: TrainJobs instead of PyTorchJobs
  bool skip_speed = false;
  bool skip_memory = false;
};

// Registers every flag on `app`, each writing into `*f` (train_jobs is derived after parsing).
void AddFlags(CLI::App& app, Flags* f);

// The folder of the kubeconfig, where tools/testenv keeps the control plane's pid files.
std::string TestenvDir(const Flags& f);

}  // namespace coach::bench::controlplane
