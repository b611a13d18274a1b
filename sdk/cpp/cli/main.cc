// `coach`: the command-line client. Wiring only: each subcommand lives in its own file.

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "common/version/version.h"
#include "sdk/cpp/cli/exit_codes.h"
#include "sdk/cpp/cli/offline_commands.h"
#include "sdk/cpp/cli/remote_cli.h"

int main(int argc, char** argv) {
  CLI::App app{"coach: distributed training jobs (kubeflow.org/v1) on Kubernetes or this machine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("coach ") + coach::kVersion);

  coach::cli::OfflineOptions offline;
  auto add_offline = [&offline](CLI::App* command) {
    command->add_option("-f,--filename", offline.file, "manifest file (YAML or JSON), - for stdin")
        ->required();
    command->add_option("-o,--output", offline.output, "output format")
        ->check(CLI::IsMember({"yaml", "json"}));
    command->add_option("-n,--namespace", offline.namespace_,
                        "namespace for jobs that name none (default: default)");
  };
  CLI::App* validate =
      app.add_subcommand("validate", "check manifests; print the normalized, defaulted jobs");
  add_offline(validate);
  CLI::App* render = app.add_subcommand(
      "render", "print the Kubernetes objects a job would create, without running anything");
  add_offline(render);
  render->add_option("--training-runtimes", offline.training_runtimes,
                     "a directory of TrainingRuntime/ClusterTrainingRuntime YAML files (read "
                     "recursively) for TrainJobs whose runtime the input does not hold");
  render
      ->add_option("--gang-scheduler", offline.gang_scheduler,
                   "the operator's gang scheduler: PodGroups and pod ties as it makes them")
      ->check(CLI::IsMember({"none", "volcano", "scheduler-plugins"}));
  coach::karpenter::ConfigFlags karpenter;
  render->add_flag("--karpenter", karpenter.enabled,
                   "add the operator's Karpenter placement (NodePools, toleration, zone, "
                   "do-not-disrupt), as an operator started with --karpenter does");
  render
      ->add_option("--karpenter-gpu-nodepool", karpenter.gpu_nodepool,
                   "NodePool of accelerator replicas")
      ->capture_default_str();
  render
      ->add_option("--karpenter-cpu-nodepool", karpenter.cpu_nodepool,
                   "NodePool of the other replicas; empty: anywhere but the GPU NodePool")
      ->capture_default_str();
  render
      ->add_option("--karpenter-gpu-taint", karpenter.gpu_taint,
                   "the GPU NodePool's taint, key[=value]:Effect; empty: none")
      ->capture_default_str();
  render
      ->add_option("--karpenter-zone-policy", karpenter.zone_policy, "none | preferred | required")
      ->capture_default_str();
  coach::cli::RemoteCli remote;
  coach::cli::RegisterRemoteCommands(app, &remote);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? coach::cli::kExitOk : coach::cli::kExitUsage;
  }

  if (validate->parsed()) return coach::cli::RunValidate(offline, std::cout, std::cerr);
  if (render->parsed()) return coach::cli::RunRender(offline, karpenter, std::cout, std::cerr);
  if (std::optional<int> code = coach::cli::RunRemoteCommand(remote, std::cout, std::cerr)) {
    return *code;
  }
  return coach::cli::kExitUsage;
}
