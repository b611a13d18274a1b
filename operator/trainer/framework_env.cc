#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/quantity.h"
#include "common/status_macros.h"
#include "operator/trainer/merge_runtime.h"
#include "operator/trainer/plan.h"
#include "operator/trainer/upsert.h"

// Upstream: pkg/runtime/framework/plugins/{torch,mpi,jax,xgboost,plainml}/*.go at v2.3.0.

namespace coach::trainer::internal {
namespace {

constexpr char kCompletionIndexPath[] =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";

absl::StatusOr<int64_t> QuantityValue(const nlohmann::json& q, const std::string& path) {
  std::string text = q.is_string() ? q.get<std::string>() : q.dump();
  std::optional<Quantity> parsed = Quantity::Parse(text);
  if (!q.is_string() && !q.is_number()) parsed.reset();
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a quantity: ", q.dump()));
  }
  return parsed->Value();
}

absl::StatusOr<int64_t> GpusIn(const nlohmann::json& list, const std::string& path) {
  if (!list.is_object()) return 0;
  // Upstream walks a Go map (random order); a sorted walk picks the same one every time.
  std::vector<std::string> names;
  for (const auto& [name, value] : list.items()) names.push_back(name);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (absl::StrContains(absl::AsciiStrToLower(name), "gpu")) {
      return QuantityValue(list[name], absl::StrCat(path, ".", name));
    }
  }
  return 0;
}

std::string Host(const Plan& plan, const std::string& job, int index) {
  return absl::StrCat(plan.name, "-", job, "-0-", index, ".", plan.name);
}

nlohmann::json* TrainerContainer(Plan& plan) {
  return FindNamed(plan.PodSpec(plan.trainer_index)["containers"], kNode);
}

// The TrainJob's spec.trainer.env upserted into `container`.
void UpsertTrainerEnv(const Plan& plan, nlohmann::json& container) {
  if (plan.trainer == nullptr || !plan.trainer->contains("env")) return;
  for (const nlohmann::json& e : (*plan.trainer)["env"]) UpsertEnv(container["env"], e);
}

void UpsertTrainerPort(nlohmann::json& container) {
  UpsertPort(container["ports"], {{"containerPort", kTrainerPort}});
}

int64_t TrainerNumNodes(const Plan& plan) {
  if (plan.trainer != nullptr && plan.trainer->contains("numNodes")) {
    return (*plan.trainer)["numNodes"].get<int64_t>();
  }
  return -1;
}

bool IsTorchTune(const Plan& plan) {
  return plan.trainer != nullptr && plan.trainer->contains("command") &&
         (*plan.trainer)["command"] == nlohmann::json::array({"tune", "run"});
}

bool ArgsContain(const nlohmann::json& args, const char* item) {
  for (const nlohmann::json& a : args) {
    if (absl::StrContains(a.get<std::string>(), item)) return true;
  }
  return false;
}

// A "key=value" arg whose key contains `item` and whose value is "true" in any casing.
bool ArgEnabled(const nlohmann::json& args, const char* item) {
  for (const nlohmann::json& a : args) {
    std::pair<std::string, std::string> kv =
        absl::StrSplit(a.get<std::string>(), absl::MaxSplits('=', 1));
    if (a.get<std::string>().find('=') == std::string::npos) continue;
    if (absl::StrContains(kv.first, item) &&
        absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(kv.second), "true")) {
      return true;
    }
  }
  return false;
}

// "torchtune-llama3.2-1b" -> "llama3_2/1B"; "" unless the name has exactly three parts.
std::string TorchTuneModel(const std::string& runtime_name) {
  std::vector<std::string> parts = absl::StrSplit(runtime_name, '-');
  if (parts.size() != 3) return "";
  return absl::StrCat(absl::StrReplaceAll(parts[1], {{".", "_"}}), "/",
                      absl::AsciiStrToUpper(parts[2]));
}

// The recipe and config torchtune's rendezvous needs (upstream getRecipeAndConfig).
std::pair<std::string, std::string> TorchTuneRecipe(const Plan& plan, int64_t num_nodes,
                                                    int64_t nproc, int64_t gpus) {
  nlohmann::json args = plan.trainer->value("args", nlohmann::json::array());
  const bool qlora = !ArgEnabled(args, "model.use_dora") && ArgEnabled(args, "model.quantize_base");
  const bool lora = ArgsContain(args, "model.lora_attn_modules");
  std::string recipe = "full_finetune_distributed";
  std::string suffix = "_full";
  if (num_nodes == 1 && (nproc == 1 || gpus == 1)) {
    recipe = qlora || lora ? "lora_finetune_single_device" : "full_finetune_single_device";
    suffix = qlora ? "_qlora_single_device" : lora ? "_lora_single_device" : "_full_single_device";
  } else if (num_nodes == 1 && qlora) {
    recipe = "lora_finetune_distributed";
    suffix = "_qlora";
  } else if (num_nodes == 1 && lora) {
    recipe = "lora_finetune_distributed";
    suffix = "_lora";
  } else if (num_nodes > 1) {
    suffix = "_full_multinode";
  }
  return {recipe, TorchTuneModel(plan.runtime_name) + suffix};
}

// The runtime's own `key=value` overrides for paths the runtime manages.
std::vector<std::string> TorchTuneRuntimeOverrides(Plan& plan) {
  static const std::set<std::string> kImmutable = {
      "output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"};
  std::vector<std::string> out;
  nlohmann::json* node = TrainerContainer(plan);
  if (node == nullptr || !node->contains("command")) return out;
  for (const nlohmann::json& c : (*node)["command"]) {
    std::string arg = c.get<std::string>();
    if (kImmutable.count(arg.substr(0, arg.find('='))) > 0) out.push_back(arg);
  }
  return out;
}

absl::Status ApplyTorch(Plan& plan) {
  const nlohmann::json& torch = plan.ml_policy["torch"];
  if (int64_t n = TrainerNumNodes(plan); n >= 0) plan.counts[plan.trainer_index] = n;
  const int64_t num_nodes = plan.counts[plan.trainer_index];

  nlohmann::json resources = ResourcesPerNode(plan);
  ASSIGN_OR_RETURN(int64_t gpus, GpusPerNode(resources));
  // -1 stands for "auto", torchrun's own choice (one per GPU).
  int64_t nproc = -1;
  if (plan.trainer != nullptr && plan.trainer->contains("numProcPerNode")) {
    nproc = (*plan.trainer)["numProcPerNode"].get<int64_t>();
  }
  if (nproc == -1 && gpus == 0) {
    ASSIGN_OR_RETURN(int64_t cpus, CpusPerNode(resources));
    nproc = std::max<int64_t>(1, cpus);
  }
  const std::string nproc_text = nproc == -1 ? "auto" : absl::StrCat(nproc);

  std::vector<nlohmann::json> pet = {
      EnvValue("PET_NNODES", absl::StrCat(num_nodes)),
      EnvValue("PET_NPROC_PER_NODE", nproc_text),
      EnvFieldRef("PET_NODE_RANK", kCompletionIndexPath),
  };
  std::vector<nlohmann::json> master = {
      EnvValue("PET_MASTER_ADDR", Host(plan, kNode, 0)),
      EnvValue("PET_MASTER_PORT", absl::StrCat(kTrainerPort)),
  };

  // Quirk kept from upstream: without spec.trainer the trainer container gets none of this.
  nlohmann::json* node = plan.trainer != nullptr ? TrainerContainer(plan) : nullptr;
  if (node != nullptr) {
    UpsertTrainerEnv(plan, *node);
    for (const nlohmann::json& e : pet) UpsertEnv((*node)["env"], e);
    if (!IsTorchTune(plan)) {
      for (const nlohmann::json& e : master) UpsertEnv((*node)["env"], e);
    } else {
      nlohmann::json command = (*plan.trainer)["command"];
      if (num_nodes > 1 || nproc > 1 || (nproc == -1 && gpus > 1)) {
        command.push_back(
            absl::StrCat("--rdzv_endpoint=", Host(plan, kNode, 0), ":", kTrainerPort));
      }
      auto [recipe, config] = TorchTuneRecipe(plan, num_nodes, nproc, gpus);
      command.push_back(recipe);
      command.push_back("--config");
      command.push_back(config);
      for (const std::string& o : TorchTuneRuntimeOverrides(plan)) command.push_back(o);
      plan.trainer_command = std::move(command);
    }
    UpsertTrainerPort(*node);
  }

  if (torch.contains("envInjection") && torch["envInjection"].contains("targets")) {
    const nlohmann::json& targets = torch["envInjection"]["targets"];
    for (size_t t = 0; t < targets.size(); ++t) {
      const std::string path = absl::StrCat("spec.mlPolicy.torch.envInjection.targets[", t, "]");
      const std::string job = targets[t].value("jobName", "");
      int j = plan.FindJob(job);
      if (j < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ".jobName: the runtime has no replicated job \"", job, "\""));
      }
      const nlohmann::json names = targets[t].value("containerNames", nlohmann::json::array());
      for (size_t c = 0; c < names.size(); ++c) {
        const std::string name = names[c].is_string() ? names[c].get<std::string>() : "";
        nlohmann::json* target = FindNamed(plan.PodSpec(j)["containers"], name);
        if (target == nullptr) target = FindNamed(plan.PodSpec(j)["initContainers"], name);
        if (target == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              path, ".containerNames[", c, "]: job \"", job, "\" has no container \"", name, "\""));
        }
        for (const nlohmann::json& e : pet) UpsertEnv((*target)["env"], e);
        for (const nlohmann::json& e : master) UpsertEnv((*target)["env"], e);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyMpi(Plan& plan) {
  nlohmann::json& mpi = plan.ml_policy["mpi"];
  const std::string impl = mpi.value("mpiImplementation", "OpenMPI");
  if (impl != "OpenMPI") {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.mlPolicy.mpi.mpiImplementation: unsupported: ", impl));
  }
  const bool launcher_as_node = mpi.value("runLauncherAsNode", false);
  if (int64_t n = TrainerNumNodes(plan); n >= 0) {
    if (int j = plan.FindJob(kNode); j >= 0) {
      plan.counts[j] = launcher_as_node ? std::max<int64_t>(n - 1, 1) : n;
    }
  }
  int64_t slots = mpi.value("numProcPerNode", int64_t{1});
  if (plan.trainer != nullptr && plan.trainer->contains("numProcPerNode")) {
    slots = (*plan.trainer)["numProcPerNode"].get<int64_t>();
  } else if (slots == 1) {
    ASSIGN_OR_RETURN(int64_t gpus, GpusPerNode(ResourcesPerNode(plan)));
    if (gpus > 1) slots = gpus;
  }
  mpi["numProcPerNode"] = slots;
  const std::string ssh_path = mpi.value("sshAuthMountPath", "/root/.ssh");

  const nlohmann::json ssh_volume = {
      {"name", "mpi-ssh-auth"},
      {"secret",
       {{"secretName", plan.name + "-mpi-ssh-auth"},
        {"defaultMode", 0400},
        {"items",
         {{{"key", "ssh-privatekey"}, {"path", "id_rsa"}, {"mode", 0640}},
          {{"key", "ssh-publickey"}, {"path", "id_rsa.pub"}, {"mode", 0644}},
          {{"key", "ssh-publickey"}, {"path", "authorized_keys"}, {"mode", 0644}}}}}}};
  const nlohmann::json hostfile_volume = {
      {"name", "mpi-hostfile"},
      {"configMap",
       {{"name", plan.name + "-mpi-hostfile"},
        {"items", {{{"key", "hostfile"}, {"path", "hostfile"}, {"mode", 0444}}}}}}};
  for (size_t j = 0; j < plan.counts.size(); ++j) {
    const std::string& job = plan.JobName(j);
    if (job != kNode && job != kLauncher) continue;
    nlohmann::json& pod = plan.PodSpec(j);
    UpsertVolume(pod["volumes"], ssh_volume);
    if (job == kLauncher) UpsertVolume(pod["volumes"], hostfile_volume);
    nlohmann::json* node = FindNamed(pod["containers"], kNode);
    if (node == nullptr) continue;
    UpsertVolumeMount((*node)["volumeMounts"], {{"name", "mpi-ssh-auth"}, {"mountPath", ssh_path}});
    if (job != kLauncher) continue;
    UpsertVolumeMount((*node)["volumeMounts"],
                      {{"name", "mpi-hostfile"}, {"mountPath", "/etc/mpi"}});
    UpsertEnv((*node)["env"], EnvValue("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"));
    UpsertEnv((*node)["env"], EnvValue("OMPI_MCA_orte_keep_fqdn_hostnames", "true"));
    UpsertEnv((*node)["env"], EnvValue("OMPI_MCA_orte_set_default_slots", absl::StrCat(slots)));
    UpsertEnv((*node)["env"], EnvValue("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"));
  }
  return absl::OkStatus();
}

absl::Status ApplyJax(Plan& plan) {
  if (int64_t n = TrainerNumNodes(plan); n >= 0) plan.counts[plan.trainer_index] = n;
  nlohmann::json* node = plan.trainer != nullptr ? TrainerContainer(plan) : nullptr;
  if (node == nullptr) return absl::OkStatus();
  UpsertEnv((*node)["env"],
            EnvValue("JAX_NUM_PROCESSES", absl::StrCat(plan.counts[plan.trainer_index])));
  UpsertEnv((*node)["env"], EnvFieldRef("JAX_PROCESS_ID", kCompletionIndexPath));
  UpsertEnv((*node)["env"], EnvValue("JAX_COORDINATOR_ADDRESS",
                                     absl::StrCat(Host(plan, kNode, 0), ":", kTrainerPort)));
  UpsertTrainerPort(*node);
  return absl::OkStatus();
}

// Plain ML (no torch, mpi or jax policy; XGBoost too): the pod count and the trainer's env.
void ApplyPlain(Plan& plan) {
  if (int64_t n = TrainerNumNodes(plan); n >= 0) plan.counts[plan.trainer_index] = n;
  nlohmann::json* node = plan.trainer != nullptr ? TrainerContainer(plan) : nullptr;
  if (node != nullptr) UpsertTrainerEnv(plan, *node);
}

absl::Status ApplyXgboost(Plan& plan) {
  nlohmann::json* node = plan.trainer != nullptr ? TrainerContainer(plan) : nullptr;
  if (node == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t gpus, GpusPerNode(ResourcesPerNode(plan)));
  const int64_t workers = plan.counts[plan.trainer_index] * (gpus > 0 ? gpus : 1);
  UpsertEnv((*node)["env"], EnvValue("DMLC_TRACKER_URI", Host(plan, kNode, 0)));
  UpsertEnv((*node)["env"], EnvValue("DMLC_TRACKER_PORT", absl::StrCat(kTrainerPort)));
  UpsertEnv((*node)["env"], EnvFieldRef("DMLC_TASK_ID", kCompletionIndexPath));
  UpsertEnv((*node)["env"], EnvValue("DMLC_NUM_WORKER", absl::StrCat(workers)));
  UpsertTrainerPort(*node);
  return absl::OkStatus();
}

}  // namespace

nlohmann::json ResourcesPerNode(Plan& plan) {
  if (plan.trainer != nullptr && plan.trainer->contains("resourcesPerNode")) {
    return (*plan.trainer)["resourcesPerNode"];
  }
  for (size_t j = 0; j < plan.counts.size(); ++j) {
    if (plan.JobName(j) != kNode && plan.ancestors[j] != kAncestorTrainer) continue;
    nlohmann::json* node = FindNamed(plan.PodSpec(j)["containers"], kNode);
    if (node != nullptr && node->contains("resources")) return (*node)["resources"];
  }
  return nlohmann::json::object();
}

absl::StatusOr<int64_t> GpusPerNode(const nlohmann::json& resources) {
  nlohmann::json requests = resources.value("requests", nlohmann::json());
  ASSIGN_OR_RETURN(int64_t gpus, GpusIn(requests, "resources.requests"));
  if (gpus != 0) return gpus;
  return GpusIn(resources.value("limits", nlohmann::json()), "resources.limits");
}

absl::StatusOr<int64_t> CpusPerNode(const nlohmann::json& resources) {
  for (const char* list : {"requests", "limits"}) {
    const nlohmann::json l = resources.value(list, nlohmann::json());
    if (!l.is_object() || !l.contains("cpu")) continue;
    ASSIGN_OR_RETURN(int64_t cpus,
                     QuantityValue(l["cpu"], absl::StrCat("resources.", list, ".cpu")));
    if (cpus != 0) return cpus;
  }
  return 0;
}

absl::Status ApplyMlPolicy(Plan& plan) {
  const nlohmann::json& p = plan.ml_policy;
  if (p.is_object() && p.contains("flux")) {
    return absl::InvalidArgumentError("spec.mlPolicy.flux: not supported by coach");
  }
  if (p.is_object() && p.contains("torch")) return ApplyTorch(plan);
  if (p.is_object() && p.contains("mpi")) return ApplyMpi(plan);
  if (p.is_object() && p.contains("jax")) return ApplyJax(plan);
  ApplyPlain(plan);
  if (p.is_object() && p.contains("xgboost")) return ApplyXgboost(plan);
  return absl::OkStatus();
}

}  // namespace coach::trainer::internal
