// validator.trainjob.trainer.kubeflow.org (upstream pkg/webhooks/trainjob_webhook.go,
// pkg/runtime/core/{clustertrainingruntime,trainingruntime}.go ValidateObjects and the
// Validate of the jobset, torch, mpi and xgboost plugins).

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "operator/trainer/admission.h"
#include "operator/trainer/domain_prefixed_path.h"
#include "operator/trainer/elastic_nodes.h"
#include "operator/trainer/json_fields.h"
#include "operator/trainer/runtime_jobs.h"
#include "operator/trainer/semantic_equal.h"
#include "operator/trainer/train_job_fields.h"

namespace coach::trainer::admission {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using value_t = nlohmann::json::value_t;

constexpr char kGroup[] = "trainer.kubeflow.org";
constexpr char kClusterKind[] = "ClusterTrainingRuntime";
constexpr char kNamespacedKind[] = "TrainingRuntime";
constexpr char kDatasetInitializer[] = "dataset-initializer";
constexpr char kModelInitializer[] = "model-initializer";
constexpr char kNode[] = "node";
constexpr char kAncestorTrainer[] = "trainer";
constexpr char kLauncher[] = "launcher";
constexpr char kInitializerVolume[] = "initializer";
constexpr char kDeprecationPolicyUrl[] =
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html"
    "#runtime-deprecation-policy";

const std::set<std::string>& TorchReservedEnv() {
  static const auto* names = new std::set<std::string>{
      "PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"};
  return *names;
}

const std::set<std::string>& MpiReservedEnv() {
  static const auto* names = new std::set<std::string>{
      "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args",
      "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"};
  return *names;
}

const std::set<std::string>& XgboostReservedEnv() {
  static const auto* names = new std::set<std::string>{"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT",
                                                       "DMLC_TASK_ID", "DMLC_NUM_WORKER"};
  return *names;
}

// obj[key], or null when absent; for reads whose type a shape check has already settled.
const json& At(const json& obj, const char* key) {
  static const json* null = new json();
  if (!obj.is_object()) return *null;
  auto it = obj.find(key);
  return it == obj.end() ? *null : *it;
}

// The runtimeRef as Go's json.Marshal prints trainer.RuntimeRef (field order, omitempty).
ordered_json RuntimeRefValue(const json& ref) {
  ordered_json out = ordered_json::object();
  for (const char* key : {"name", "apiGroup", "kind"}) {
    const json& v = At(ref, key);
    if (v.is_string() && !v.get<std::string>().empty()) out[key] = v;
  }
  return out;
}

// A list of corev1.EnvVar as Go prints it: name, value (omitempty), valueFrom.
ordered_json EnvValue(const json& env) {
  ordered_json out = ordered_json::array();
  for (const json& e : env) {
    ordered_json item = ordered_json::object();
    item["name"] = At(e, "name");
    const json& value = At(e, "value");
    if (value.is_string() && !value.get<std::string>().empty()) item["value"] = value;
    if (!At(e, "valueFrom").is_null()) item["valueFrom"] = ordered_json(At(e, "valueFrom"));
    out.push_back(std::move(item));
  }
  return out;
}

// The names in `env` that `reserved` holds, sorted, as Go's %v prints a []string.
std::string ReservedIn(const json& env, const std::set<std::string>& reserved) {
  std::set<std::string> found;
  for (const json& e : env) {
    const json& name = At(e, "name");
    if (name.is_string() && reserved.count(name.get<std::string>()) > 0) found.insert(name);
  }
  return found.empty() ? "" : absl::StrCat("[", absl::StrJoin(found, " "), "]");
}

// What the checks read of the TrainJob beyond train_job_fields' shape checks.
absl::Status CheckPatchShapes(const json& patches) {
  for (size_t i = 0; i < patches.size(); ++i) {
    const std::string p = absl::StrCat("spec.runtimePatches[", i, "]");
    RETURN_IF_ERROR(Member(patches[i], "manager", value_t::string, p + ".manager").status());
    const json& spec = At(At(At(patches[i], "trainingRuntimeSpec"), "template"), "spec");
    if (spec.is_null()) continue;
    const std::string sp = p + ".trainingRuntimeSpec.template.spec";
    ASSIGN_OR_RETURN(const json* jobs, ObjectList(spec, "replicatedJobs", sp + ".replicatedJobs"));
    if (jobs == nullptr) continue;
    for (size_t j = 0; j < jobs->size(); ++j) {
      const std::string jp = absl::StrCat(sp, ".replicatedJobs[", j, "]");
      RETURN_IF_ERROR(Member((*jobs)[j], "name", value_t::string, jp + ".name").status());
      const json* cur = &(*jobs)[j];
      std::string path = jp;
      for (const char* key : {"template", "spec", "template", "spec"}) {
        absl::StrAppend(&path, ".", key);
        ASSIGN_OR_RETURN(cur, Member(*cur, key, value_t::object, path));
        if (cur == nullptr) break;
      }
      if (cur == nullptr) continue;
      for (const char* kind : {"initContainers", "containers"}) {
        const std::string cp = absl::StrCat(path, ".", kind);
        ASSIGN_OR_RETURN(const json* cs, ObjectList(*cur, kind, cp));
        if (cs == nullptr) continue;
        for (size_t c = 0; c < cs->size(); ++c) {
          const std::string ip = absl::StrCat(cp, "[", c, "]");
          RETURN_IF_ERROR(Member((*cs)[c], "name", value_t::string, ip + ".name").status());
          RETURN_IF_ERROR(Member((*cs)[c], "env", value_t::array, ip + ".env").status());
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOldShapes(const json& old) {
  if (!old.is_object()) return absl::InvalidArgumentError("old TrainJob: must be an object");
  ASSIGN_OR_RETURN(const json* spec, Member(old, "spec", value_t::object, "old spec"));
  if (spec == nullptr) return absl::OkStatus();
  RETURN_IF_ERROR(Member(*spec, "suspend", value_t::boolean, "old spec.suspend").status());
  return Member(*spec, "runtimePatches", value_t::array, "old spec.runtimePatches").status();
}

absl::Status CheckMlPolicyShapes(const json& runtime) {
  const json& ml = At(At(runtime, "spec"), "mlPolicy");
  const json& injection = At(At(ml, "torch"), "envInjection");
  if (!injection.is_object()) return absl::OkStatus();
  const std::string p = "spec.mlPolicy.torch.envInjection.targets";
  ASSIGN_OR_RETURN(const json* targets, ObjectList(injection, "targets", p));
  if (targets == nullptr) return absl::OkStatus();
  for (size_t t = 0; t < targets->size(); ++t) {
    const std::string tp = absl::StrCat(p, "[", t, "]");
    RETURN_IF_ERROR(Member((*targets)[t], "jobName", value_t::string, tp + ".jobName").status());
    ASSIGN_OR_RETURN(const json* names, Member((*targets)[t], "containerNames", value_t::array,
                                               tp + ".containerNames"));
    if (names == nullptr) continue;
    for (const json& n : *names) {
      if (!n.is_string()) {
        return absl::InvalidArgumentError(tp + ".containerNames: must be a list of strings");
      }
    }
  }
  return absl::OkStatus();
}

bool IsTrue(const json& v) { return v.is_boolean() && v.get<bool>(); }

class TrainJobRules {
 public:
  TrainJobRules(const json& train_job, const json& runtime, const json* old,
                const std::vector<RuntimeJob>& jobs)
      : train_job_(train_job),
        spec_(At(train_job, "spec")),
        ml_(At(At(runtime, "spec"), "mlPolicy")),
        old_(old) {
    for (const RuntimeJob& j : jobs) {
      jobs_[j.name] = &j;
      if (trainer_job_.empty() && j.ancestor == kAncestorTrainer) trainer_job_ = j.name;
    }
  }

  void Run(std::vector<FieldError>& errors) {
    Initializer("dataset", kDatasetInitializer, "datasetConfig", errors);
    Initializer("model", kModelInitializer, "modelConfig", errors);
    PatchesImmutable(errors);
    Patches(errors);
    if (!At(ml_, "torch").is_null()) Torch(errors);
    if (!At(ml_, "mpi").is_null()) Mpi(errors);
    if (!At(ml_, "xgboost").is_null()) Xgboost(errors);
    Elastic(errors);
  }

 private:
  const RuntimeJob* Job(const std::string& name) const {
    auto it = jobs_.find(name);
    return it == jobs_.end() ? nullptr : it->second;
  }

  const json& TrainerEnv() const { return At(At(spec_, "trainer"), "env"); }

  void Initializer(const char* key, const std::string& job_name, const char* config,
                   std::vector<FieldError>& errors) const {
    if (At(At(spec_, "initializer"), key).is_null()) return;
    const ordered_json ref = RuntimeRefValue(At(spec_, "runtimeRef"));
    const RuntimeJob* job = Job(job_name);
    if (job == nullptr) {
      errors.push_back(
          Invalid("spec.runtimeRef", ref,
                  absl::StrCat("must have ", job_name,
                               " job when trainJob is configured with input ", config)));
      return;
    }
    if (!job->HasContainer(job_name)) {
      errors.push_back(Invalid("spec.runtimeRef", ref,
                               absl::StrCat("must have container with name - ", job_name,
                                            " in the ", job_name, " job")));
      return;
    }
    // Upstream looks for the mount in containers only, although an initContainer of that name
    // passes the check above.
    for (const RuntimeContainer& c : job->containers) {
      if (c.name != job_name) continue;
      for (const std::string& m : c.volume_mounts) {
        if (m == kInitializerVolume) return;
      }
    }
    errors.push_back(
        Invalid("spec.runtimeRef", ref,
                absl::StrCat("must have volumeMount with name - ", kInitializerVolume,
                             " in container ", job_name, " of the ", job_name, " job")));
  }

  void PatchesImmutable(std::vector<FieldError>& errors) const {
    if (old_ == nullptr) return;
    const json& old_spec = At(*old_, "spec");
    if (SemanticEqual(At(old_spec, "runtimePatches"), At(spec_, "runtimePatches"))) return;
    if (IsTrue(At(old_spec, "suspend")) || IsTrue(At(spec_, "suspend"))) return;
    errors.push_back(Forbidden("spec.runtimePatches",
                               "RuntimePatches can only be modified when the TrainJob is "
                               "suspended before or after the update"));
  }

  void Patches(std::vector<FieldError>& errors) const {
    const json& patches = At(spec_, "runtimePatches");
    if (!patches.is_array()) return;
    const ordered_json shown(patches);
    const std::string path = "spec.runtimePatches";
    for (const json& patch : patches) {
      const json& manager = At(patch, "manager");
      for (FieldError& e : DomainPrefixedPathErrors(
               path + ".manager", manager.is_string() ? manager.get<std::string>() : "")) {
        errors.push_back(std::move(e));
      }
      const json& rjobs =
          At(At(At(At(patch, "trainingRuntimeSpec"), "template"), "spec"), "replicatedJobs");
      if (!rjobs.is_array()) continue;
      for (const json& rjob : rjobs) {
        const std::string name =
            At(rjob, "name").is_string() ? At(rjob, "name").get<std::string>() : "";
        const RuntimeJob* job = Job(name);
        if (job == nullptr) {
          errors.push_back(Invalid(
              path, shown,
              "must not have replicated job that doesn't exist in the runtime job template"));
          continue;
        }
        const json& pod = At(At(At(At(rjob, "template"), "spec"), "template"), "spec");
        for (const json& c : At(pod, "initContainers")) {
          if (!job->HasContainer(At(c, "name").is_string() ? At(c, "name").get<std::string>()
                                                           : "")) {
            errors.push_back(Invalid(path, shown,
                                     absl::StrCat("must not have initContainer that doesn't exist "
                                                  "in the runtime job ",
                                                  name)));
          }
        }
        for (const json& c : At(pod, "containers")) {
          const std::string cname =
              At(c, "name").is_string() ? At(c, "name").get<std::string>() : "";
          if (!job->HasContainer(cname)) {
            errors.push_back(Invalid(
                path, shown,
                absl::StrCat("must not have container that doesn't exist in the runtime job ",
                             name)));
          } else if (!At(c, "env").empty() && (cname == kDatasetInitializer ||
                                               cname == kModelInitializer || cname == kNode)) {
            errors.push_back(Invalid(path, shown,
                                     "must not have envs for the dataset-initializer, "
                                     "model-initializer, node containers"));
          }
        }
      }
    }
  }

  void Torch(std::vector<FieldError>& errors) const {
    for (const json& target : At(At(At(ml_, "torch"), "envInjection"), "targets")) {
      const std::string job_name = At(target, "jobName").get<std::string>();
      ordered_json shown = ordered_json::object();
      shown["jobName"] = job_name;
      if (!At(target, "containerNames").empty())
        shown["containerNames"] = At(target, "containerNames");
      for (const json& c : At(target, "containerNames")) {
        const std::string cname = c.get<std::string>();
        const RuntimeJob* job = Job(job_name);
        if (job != nullptr && job->HasContainer(cname)) continue;
        errors.push_back(
            Invalid("spec.runtimeRef", shown,
                    absl::StrCat("envInjection target podSet ", GoQuote(job_name), " container ",
                                 GoQuote(cname), " not found in runtime template")));
      }
    }
    ReservedEnv(TorchReservedEnv(), errors);
  }

  void ReservedEnv(const std::set<std::string>& reserved, std::vector<FieldError>& errors) const {
    const std::string found = ReservedIn(TrainerEnv(), reserved);
    if (found.empty()) return;
    errors.push_back(Invalid("spec.trainer.env", EnvValue(TrainerEnv()),
                             "must not have reserved envs, invalid envs configured: " + found));
  }

  void Mpi(std::vector<FieldError>& errors) const {
    const json& trainer = At(spec_, "trainer");
    if (trainer.is_null()) return;
    const json& num_nodes = At(trainer, "numNodes");
    const int64_t nodes = num_nodes.is_number_integer() ? num_nodes.get<int64_t>() : 1;
    if (nodes >= 2 && IsTrue(At(At(ml_, "mpi"), "runLauncherAsNode")) &&
        (Job(kLauncher) == nullptr || Job(kNode) == nullptr)) {
      errors.push_back(
          Invalid("spec.trainer.numNodes", nodes,
                  "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode "
                  "does not have either launcher and node"));
    }
    ReservedEnv(MpiReservedEnv(), errors);
  }

  void Xgboost(std::vector<FieldError>& errors) const {
    const json& env = TrainerEnv();
    for (size_t i = 0; i < env.size(); ++i) {
      const std::string name = At(env[i], "name").get<std::string>();
      if (XgboostReservedEnv().count(name) == 0) continue;
      errors.push_back(Forbidden(absl::StrCat("spec.trainer.env[", i, "]"),
                                 name + " is reserved for the XGBoost runtime"));
    }
  }

  // Coach's own rule, not upstream's: coach.dev/elastic-min-nodes (elastic_nodes.h).
  void Elastic(std::vector<FieldError>& errors) const {
    ElasticFacts facts;
    facts.torch = !At(ml_, "torch").is_null();
    facts.trainer_job = trainer_job_;
    const json& ml_nodes = At(ml_, "numNodes");
    const json& trainer_nodes = At(At(spec_, "trainer"), "numNodes");
    if (trainer_nodes.is_number_integer()) {
      facts.num_nodes = trainer_nodes.get<int64_t>();
    } else if (ml_nodes.is_number_integer()) {
      facts.num_nodes = ml_nodes.get<int64_t>();
    }
    absl::StatusOr<std::optional<ElasticNodes>> nodes = ReadElasticNodes(train_job_, facts);
    if (!nodes.ok()) errors.push_back(Plain(std::string(nodes.status().message())));
  }

  const json& train_job_;
  const json& spec_;
  const json& ml_;
  const json* old_;
  std::map<std::string, const RuntimeJob*> jobs_;
  std::string trainer_job_;
};

absl::StatusOr<Result> Validate(const json& train_job, const json* runtime, const json* old) {
  Result result;
  if (!train_job.is_object()) return absl::InvalidArgumentError("TrainJob: must be an object");
  ASSIGN_OR_RETURN(const json* spec, Member(train_job, "spec", value_t::object, "spec"));
  if (spec == nullptr) return absl::InvalidArgumentError("spec: required");
  ASSIGN_OR_RETURN(const json* ref,
                   Member(*spec, "runtimeRef", value_t::object, "spec.runtimeRef"));
  if (ref == nullptr) return absl::InvalidArgumentError("spec.runtimeRef: required");
  ASSIGN_OR_RETURN(std::string group, StringMember(*ref, "apiGroup", "spec.runtimeRef.apiGroup"));
  ASSIGN_OR_RETURN(std::string kind, StringMember(*ref, "kind", "spec.runtimeRef.kind"));
  // schema.GroupKind.String().
  const std::string key = group.empty() ? kind : absl::StrCat(kind, ".", group);
  if (group != kGroup || (kind != kClusterKind && kind != kNamespacedKind)) {
    result.errors.push_back(Plain("unsupported runtime: " + key));
    return result;
  }
  RETURN_IF_ERROR(trainer::ValidateTrainJob(train_job));
  if (old != nullptr) RETURN_IF_ERROR(CheckOldShapes(*old));
  const json* patches = nullptr;
  ASSIGN_OR_RETURN(patches, ObjectList(*spec, "runtimePatches", "spec.runtimePatches"));
  if (patches != nullptr) RETURN_IF_ERROR(CheckPatchShapes(*patches));

  const bool cluster = kind == kClusterKind;
  if (runtime == nullptr) {
    const std::string name = At(*ref, "name").get<std::string>();
    result.errors.push_back(
        Invalid(cluster ? "spec.RuntimeRef" : "spec.runtimeRef", RuntimeRefValue(*ref),
                absl::StrCat(cluster ? "clustertrainingruntimes" : "trainingruntimes", ".", kGroup,
                             " ", GoQuote(name), " not found: specified ",
                             cluster ? "clusterTrainingRuntime" : "trainingRuntime",
                             " must be created before the TrainJob is created")));
    return result;
  }
  RETURN_IF_ERROR(trainer::ValidateRuntime(train_job, *runtime));
  RETURN_IF_ERROR(CheckMlPolicyShapes(*runtime));
  ASSIGN_OR_RETURN(std::vector<RuntimeJob> jobs, ReadRuntimeJobs(*runtime));
  ASSIGN_OR_RETURN(std::string support, Label(*runtime, "trainer.kubeflow.org/support"));
  if (cluster && support == "deprecated") {
    ASSIGN_OR_RETURN(std::string name, ObjectName(*runtime));
    result.warnings.push_back(absl::StrCat(
        "Referenced ClusterTrainingRuntime \"", name,
        "\" is deprecated and will be removed in a future release of Kubeflow Trainer. See "
        "runtime deprecation policy: ",
        kDeprecationPolicyUrl));
  }
  TrainJobRules(train_job, *runtime, old, jobs).Run(result.errors);
  return result;
}

}  // namespace

absl::StatusOr<Result> ValidateTrainJob(const json& train_job, const json* runtime,
                                        const json* old_train_job) {
  // The reads above check every type they rely on; this only keeps a missed one from
  // escaping as an exception.
  try {
    return Validate(train_job, runtime, old_train_job);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed TrainJob or runtime: ", e.what()));
  }
}

}  // namespace coach::trainer::admission
