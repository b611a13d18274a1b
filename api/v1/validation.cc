#include "api/v1/validation.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/job_policies.h"
#include "api/v1/kinds.h"
#include "api/v1/pod_template.h"

namespace coach::api::v1 {
namespace {

using nlohmann::json;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63.
bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// A DNS-1123 label that starts with a letter.
bool IsDns1035Label(const std::string& s) {
  return IsDns1123Label(s) && s.front() >= 'a' && s.front() <= 'z';
}

bool IsDns1123Subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!IsDns1123Label(part)) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63.
bool IsQualifiedNamePart(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string QualifiedNameProblem(const std::string& key) {
  size_t slash = key.find('/');
  std::string name = key;
  if (slash != std::string::npos) {
    std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (!IsDns1123Subdomain(prefix)) {
      return "the prefix before '/' must be a DNS-1123 subdomain";
    }
  }
  if (!IsQualifiedNamePart(name)) {
    return "must be a qualified name: at most 63 letters, digits, '-', '_' or '.', starting "
           "and ending with a letter or digit, with an optional DNS subdomain prefix and '/'";
  }
  return "";
}

// Kubernetes resource.Quantity: a signed decimal number with an optional suffix.
bool IsQuantity(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  std::string suffix = s.substr(i);
  static const std::set<std::string> kSuffixes = {"",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n",
                                                  "u", "m",  "k",  "M",  "G",  "T",  "P",  "E"};
  if (kSuffixes.count(suffix) > 0) return true;
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t j = 1;
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    if (j >= suffix.size()) return false;
    for (; j < suffix.size(); ++j) {
      if (suffix[j] < '0' || suffix[j] > '9') return false;
    }
    return true;
  }
  return false;
}

std::string Quote(const std::string& s) { return json(s).dump(); }

std::string OneOf(const std::vector<std::string>& allowed, const std::string& got) {
  std::vector<std::string> quoted;
  for (const std::string& a : allowed) quoted.push_back(Quote(a));
  return absl::StrCat("must be one of ", absl::StrJoin(quoted, ", "), ", got ", Quote(got));
}

const std::vector<std::string>& RestartPolicies() {
  static const auto* policies = new std::vector<std::string>{
      kRestartPolicyAlways, kRestartPolicyOnFailure, kRestartPolicyNever, kRestartPolicyExitCode};
  return *policies;
}

const std::vector<std::string>& CleanPodPolicies() {
  static const auto* policies =
      new std::vector<std::string>{kCleanPodPolicyNone, kCleanPodPolicyRunning, kCleanPodPolicyAll};
  return *policies;
}

const std::vector<std::string>& SuccessPolicies() {
  static const auto* policies =
      new std::vector<std::string>{kSuccessPolicyDefault, kSuccessPolicyAllWorkers};
  return *policies;
}

bool In(const std::string& v, const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    if (a == v) return true;
  }
  return false;
}

// autoscaling/v2 MetricSourceType -> the MetricSpec field that holds its source.
const std::vector<std::pair<std::string, std::string>>& MetricSources() {
  static const auto* sources = new std::vector<std::pair<std::string, std::string>>{
      {"ContainerResource", "containerResource"},
      {"External", "external"},
      {"Object", "object"},
      {"Pods", "pods"},
      {"Resource", "resource"}};
  return *sources;
}

class Validator {
 public:
  explicit Validator(const TrainingJob& job) : job_(job) {}

  std::vector<FieldError> Run() {
    ValidateMetadata();
    info_ = FindKind(job_.kind());
    if (info_ == nullptr) {
      Error("kind", "must be set to one of the six kubeflow.org/v1 kinds or TrainJob");
      return errors_;
    }
    if (info_->kind == TRAIN_JOB) {
      ValidateTrainJob();
      return errors_;
    }
    replica_path_ = absl::StrCat("spec.", std::string(info_->replica_specs_key));
    if (const size_t bytes = job_.ByteSizeLong(); bytes > kMaxJobBytes) {
      Error(LargestPart(),
            absl::StrCat("the job is ", bytes, " bytes, more than the ", kMaxJobBytes,
                         " a Kubernetes object may have (etcd's request limit); "
                         "this is its largest part"));
    }
    ValidateReplicaSpecs();
    ValidateRunPolicy();
    ValidateKindSpecific();
    return errors_;
  }

 private:
  // The field that holds most of the job's bytes: metadata, or a replica type's template.
  std::string LargestPart() const {
    std::string part = "metadata";
    size_t most = job_.metadata().ByteSizeLong();
    for (const auto& [type, spec] : job_.spec().replica_specs()) {
      if (spec.template_json().size() > most) {
        most = spec.template_json().size();
        part = absl::StrCat(replica_path_, ".", type, ".template");
      }
    }
    return part;
  }

  void Error(const std::string& path, std::string message) {
    errors_.push_back({path, std::move(message)});
  }

  void AtLeast(const std::string& path, int64_t value, int64_t min) {
    if (value < min) Error(path, absl::StrCat("must be >= ", min, ", got ", value));
  }

  int32_t Replicas(const std::string& type) const {
    auto it = job_.spec().replica_specs().find(type);
    if (it == job_.spec().replica_specs().end()) return 0;
    if (it->second.has_replicas()) return it->second.replicas();
    return (info_->kind == MPI_JOB && type == "Worker") ? 0 : 1;
  }

  // The TrainJob CRD's own rules; the rest needs the runtime (operator/trainer/admission.h).
  void ValidateTrainJob() {
    if (const size_t bytes = job_.ByteSizeLong(); bytes > kMaxJobBytes) {
      Error("spec", absl::StrCat("the job is ", bytes, " bytes, more than the ", kMaxJobBytes,
                                 " a Kubernetes object may have (etcd's request limit)"));
    }
    const json spec = json::parse(job_.spec().train_job_spec_json(), nullptr, false);
    if (!spec.is_object()) {
      Error("spec", "required: a TrainJob's spec, as a JSON object");
      return;
    }
    const auto ref = spec.find("runtimeRef");
    if (ref == spec.end() || !ref->is_object() || !ref->contains("name") ||
        !(*ref)["name"].is_string() || (*ref)["name"].get<std::string>().empty()) {
      Error("spec.runtimeRef.name", "required: the runtime to build the job from");
    }
    const RunPolicy& rp = job_.spec().run_policy();
    if (rp.has_active_deadline_seconds()) {
      AtLeast("spec.activeDeadlineSeconds", rp.active_deadline_seconds(), 1);
    }
    if (rp.has_managed_by() && rp.managed_by() != kTrainJobController &&
        rp.managed_by() != "kueue.x-k8s.io/multikueue") {
      Error("spec.managedBy", absl::StrCat("ManagedBy must be ", kTrainJobController,
                                           " or kueue.x-k8s.io/multikueue if set"));
    }
  }

  void ValidateMetadata() {
    const ObjectMeta& meta = job_.metadata();
    if (meta.name().empty()) {
      Error("metadata.name", "required");
    } else if (!IsDns1035Label(meta.name())) {
      Error("metadata.name",
            absl::StrCat("must be a DNS-1035 label (at most 63 lowercase letters, digits and "
                         "'-', starting with a letter and ending with a letter or digit), got ",
                         Quote(meta.name())));
    }
    if (!meta.namespace_().empty() && !IsDns1123Label(meta.namespace_())) {
      Error("metadata.namespace",
            absl::StrCat("must be a DNS-1123 label (at most 63 lowercase letters, digits and "
                         "'-', starting and ending with a letter or digit), got ",
                         Quote(meta.namespace_())));
    }
    for (const auto& [key, value] : meta.labels()) {
      std::string path = absl::StrCat("metadata.labels[", key, "]");
      std::string problem = QualifiedNameProblem(key);
      if (!problem.empty()) Error(path, absl::StrCat("invalid key: ", problem));
      if (!value.empty() && !IsQualifiedNamePart(value)) {
        Error(path, absl::StrCat("invalid value ", Quote(value),
                                 ": must be empty or at most 63 letters, digits, '-', '_' or "
                                 "'.', starting and ending with a letter or digit"));
      }
    }
    for (const auto& entry : meta.annotations()) {
      std::string problem = QualifiedNameProblem(entry.first);
      if (!problem.empty()) {
        Error(absl::StrCat("metadata.annotations[", entry.first, "]"),
              absl::StrCat("invalid key: ", problem));
      }
    }
  }

  void ValidateReplicaSpecs() {
    const auto& specs = job_.spec().replica_specs();
    if (specs.empty()) {
      Error(replica_path_,
            absl::StrCat("must have at least one replica type (one of ", AllowedTypes(), ")"));
      return;
    }
    std::vector<std::string> types;
    for (const auto& entry : specs) types.push_back(entry.first);
    std::sort(types.begin(), types.end());
    for (const std::string& type : types) {
      const ReplicaSpec& spec = specs.at(type);
      const std::string path = absl::StrCat(replica_path_, ".", type);
      if (CanonicalReplicaType(info_->kind, type) != type) {
        Error(path, absl::StrCat("unknown replica type ", Quote(type), " for ",
                                 std::string(info_->name), "; allowed: ", AllowedTypes()));
        continue;
      }
      if (spec.has_replicas()) AtLeast(path + ".replicas", spec.replicas(), 0);
      if (!spec.restart_policy().empty() && !In(spec.restart_policy(), RestartPolicies())) {
        Error(path + ".restartPolicy", OneOf(RestartPolicies(), spec.restart_policy()));
      }
      ValidateTemplate(path + ".template", spec.template_json());
    }
  }

  std::string AllowedTypes() const {
    std::vector<std::string> types;
    for (std::string_view t : info_->replica_types) types.push_back(std::string(t));
    return absl::StrJoin(types, ", ");
  }

  void ValidateTemplate(const std::string& path, const std::string& template_json) {
    const std::string containers_path = path + ".spec.containers";
    json tmpl = json::object();
    if (!template_json.empty()) {
      tmpl = json::parse(template_json, nullptr, /*allow_exceptions=*/false);
      // Decoded jobs hold an object here; a job from elsewhere may not (codec::RecodeJob says
      // which field and why).
      if (tmpl.is_discarded() || !tmpl.is_object()) {
        Error(path, "must be a JSON object (a core/v1 PodTemplateSpec)");
        return;
      }
    }
    // Types first; the value checks below pass over what is of the wrong type (said already).
    for (FieldError& e : CheckPodTemplateTypes(tmpl, path)) errors_.push_back(std::move(e));
    auto spec = tmpl.find("spec");
    if (spec != tmpl.end() && !spec->is_null() && !spec->is_object()) return;
    const json* containers = nullptr;
    if (spec != tmpl.end() && spec->is_object()) {
      auto it = spec->find("containers");
      if (it != spec->end() && !it->is_null()) containers = &*it;
    }
    if (containers != nullptr && !containers->is_array()) return;
    if (containers == nullptr || containers->empty()) {
      Error(containers_path, "must have at least one container");
      return;
    }
    bool has_default = false;
    std::set<std::string> names;
    for (size_t i = 0; i < containers->size(); ++i) {
      const std::string cpath = absl::StrCat(containers_path, "[", i, "]");
      const json& c = (*containers)[i];
      if (!c.is_object()) continue;
      json name = c.value("name", json());
      if (Missing(name)) {
        Error(cpath + ".name", "required");
      } else if (name.is_string()) {
        const std::string n = name.get<std::string>();
        if (!IsDns1123Label(n)) {
          Error(cpath + ".name", absl::StrCat("must be a DNS-1123 label, got ", Quote(n)));
        }
        if (!names.insert(n).second)
          Error(cpath + ".name", absl::StrCat("duplicate name ", Quote(n)));
        if (n == info_->default_container) has_default = true;
      }
      if (Missing(c.value("image", json()))) Error(cpath + ".image", "required");
      json ports = c.value("ports", json());
      if (!ports.is_array()) continue;
      for (size_t p = 0; p < ports.size(); ++p) {
        if (!ports[p].is_object()) continue;
        const std::string ppath = absl::StrCat(cpath, ".ports[", p, "].containerPort");
        json port = ports[p].value("containerPort", json());
        if (port.is_null()) {
          Error(ppath, "required: an integer in 1..65535");
        } else if (port.is_number_integer() &&
                   (port.get<int64_t>() < 1 || port.get<int64_t>() > 65535)) {
          Error(ppath, absl::StrCat("must be in 1..65535, got ", port.dump()));
        }
      }
    }
    if (!has_default && info_->kind != MPI_JOB) {
      Error(containers_path, absl::StrCat("must have a container named ",
                                          Quote(std::string(info_->default_container))));
    }
  }

  // Absent, null or "": a required string not given.
  static bool Missing(const json& v) {
    return v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty());
  }

  void ValidateRunPolicy() {
    if (!job_.spec().has_run_policy()) return;
    const RunPolicy& rp = job_.spec().run_policy();
    const std::string path = "spec.runPolicy";
    if (rp.has_clean_pod_policy() && !In(rp.clean_pod_policy(), CleanPodPolicies())) {
      Error(path + ".cleanPodPolicy", OneOf(CleanPodPolicies(), rp.clean_pod_policy()));
    }
    if (rp.has_ttl_seconds_after_finished()) {
      AtLeast(path + ".ttlSecondsAfterFinished", rp.ttl_seconds_after_finished(), 0);
    }
    if (rp.has_active_deadline_seconds()) {
      AtLeast(path + ".activeDeadlineSeconds", rp.active_deadline_seconds(), 0);
    }
    if (rp.has_backoff_limit()) AtLeast(path + ".backoffLimit", rp.backoff_limit(), 0);
    if (rp.has_managed_by() &&
        !In(rp.managed_by(), {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"})) {
      Error(
          path + ".managedBy",
          OneOf({"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"}, rp.managed_by()));
    }
    if (!rp.has_scheduling_policy()) return;
    const SchedulingPolicy& sp = rp.scheduling_policy();
    const std::string spath = path + ".schedulingPolicy";
    if (sp.has_min_available()) {
      int64_t total = 0;
      for (const auto& entry : job_.spec().replica_specs()) total += Replicas(entry.first);
      if (sp.min_available() < 1) {
        AtLeast(spath + ".minAvailable", sp.min_available(), 1);
      } else if (sp.min_available() > total) {
        Error(spath + ".minAvailable", absl::StrCat("must be <= the total number of replicas (",
                                                    total, "), got ", sp.min_available()));
      }
    }
    if (sp.has_schedule_timeout_seconds()) {
      AtLeast(spath + ".scheduleTimeoutSeconds", sp.schedule_timeout_seconds(), 0);
    }
    for (const auto& [name, quantity] : sp.min_resources()) {
      if (!IsQuantity(quantity)) {
        Error(absl::StrCat(spath, ".minResources[", name, "]"),
              absl::StrCat("must be a quantity like \"4\", \"500m\" or \"16Gi\", got ",
                           Quote(quantity)));
      }
    }
  }

  void ValidateElastic() {
    if (!job_.spec().has_elastic_policy()) return;
    const ElasticPolicy& ep = job_.spec().elastic_policy();
    const std::string path = "spec.elasticPolicy";
    if (ep.has_min_replicas()) AtLeast(path + ".minReplicas", ep.min_replicas(), 1);
    if (ep.has_max_replicas()) AtLeast(path + ".maxReplicas", ep.max_replicas(), 1);
    if (ep.has_min_replicas() && ep.has_max_replicas() && ep.min_replicas() > ep.max_replicas()) {
      Error(path + ".minReplicas", absl::StrCat("must be <= maxReplicas (", ep.max_replicas(),
                                                "), got ", ep.min_replicas()));
    }
    if (ep.has_max_restarts()) AtLeast(path + ".maxRestarts", ep.max_restarts(), 0);
    for (FieldError& e : ValidateElasticMetrics(info_->kind, ep)) errors_.push_back(std::move(e));
    if (job_.spec().replica_specs().count("Worker") == 0) {
      Error(absl::StrCat(replica_path_, ".Worker"), "required when elasticPolicy is set");
    }
    if (info_->kind != PYTORCH_JOB) return;
    if (ep.has_rdzv_backend() && !In(ep.rdzv_backend(), {"c10d", "etcd", "etcd-v2"})) {
      Error(path + ".rdzvBackend", OneOf({"c10d", "etcd", "etcd-v2"}, ep.rdzv_backend()));
    }
    if (ep.has_rdzv_port() && (ep.rdzv_port() < 1 || ep.rdzv_port() > 65535)) {
      Error(path + ".rdzvPort", absl::StrCat("must be in 1..65535, got ", ep.rdzv_port()));
    }
    if (ep.has_n_proc_per_node()) {
      AtLeast(path + ".nProcPerNode", ep.n_proc_per_node(), 1);
      if (job_.spec().has_nproc_per_node()) {
        Error(path + ".nProcPerNode", "must not be used with spec.nprocPerNode (it is deprecated)");
      }
    }
    for (int i = 0; i < ep.rdzv_conf_size(); ++i) {
      if (ep.rdzv_conf(i).key().empty()) {
        Error(absl::StrCat(path, ".rdzvConf[", i, "].key"), "required");
      }
    }
  }

  // Jobs whose success the Workers decide (no Master/Chief to follow) need a Worker: with
  // none the job would wait forever for a replica that never exists.
  void RequireWorkers(const std::vector<std::string>& deciders) {
    const auto& specs = job_.spec().replica_specs();
    if (specs.empty()) return;  // said already
    for (const std::string& type : deciders) {
      if (specs.count(type) > 0) return;
    }
    const std::string because = deciders.empty()
                                    ? "the Workers decide when the job succeeds"
                                    : absl::StrCat("without ", absl::StrJoin(deciders, " or "),
                                                   " the Workers decide when the job succeeds");
    const std::string path = absl::StrCat(replica_path_, ".Worker");
    if (specs.count("Worker") == 0) {
      Error(path, absl::StrCat("required: ", because));
    } else if (Replicas("Worker") == 0) {  // negative: said already
      Error(path + ".replicas",
            absl::StrCat("must be >= 1: ", because, ", got ", Replicas("Worker")));
    }
  }

  void ValidateKindSpecific() {
    const TrainingJobSpec& spec = job_.spec();
    const auto& specs = spec.replica_specs();
    switch (info_->kind) {
      case PYTORCH_JOB:
      case PADDLE_JOB:
        RequireWorkers({"Master"});
        break;
      case TF_JOB:
        RequireWorkers({"Chief", "Master"});
        break;
      case JAX_JOB:
        RequireWorkers({});
        break;
      default:
        break;
    }
    switch (info_->kind) {
      case PYTORCH_JOB: {
        if (specs.count("Master") > 0 && Replicas("Master") != 1) {
          Error(replica_path_ + ".Master.replicas",
                absl::StrCat("must be 1, got ", Replicas("Master")));
        }
        if (spec.has_nproc_per_node()) {
          const std::string& n = spec.nproc_per_node();
          bool positive = !n.empty() && n.size() <= 9 &&
                          n.find_first_not_of("0123456789") == std::string::npos &&
                          std::stol(n) > 0;
          if (!positive && !In(n, {"auto", "cpu", "gpu"})) {
            Error("spec.nprocPerNode",
                  absl::StrCat("must be \"auto\", \"cpu\", \"gpu\" or a positive integer, got ",
                               Quote(n)));
          }
        }
        ValidateElastic();
        break;
      }
      case PADDLE_JOB:
        ValidateElastic();
        break;
      case TF_JOB: {
        int chief_or_master = static_cast<int>(specs.count("Chief") + specs.count("Master"));
        if (chief_or_master > 1) {
          Error(replica_path_, "must not have more than 1 Chief or Master role");
        }
        for (const char* type : {"Chief", "Master"}) {
          if (specs.count(type) > 0 && Replicas(type) > 1) {
            Error(absl::StrCat(replica_path_, ".", type, ".replicas"),
                  absl::StrCat("must be <= 1, got ", Replicas(type)));
          }
        }
        if (spec.has_success_policy() && !In(spec.success_policy(), SuccessPolicies())) {
          Error("spec.successPolicy", OneOf(SuccessPolicies(), spec.success_policy()));
        }
        break;
      }
      case XGBOOST_JOB:
        if (specs.count("Master") == 0) {
          Error(replica_path_ + ".Master", "required: an XGBoostJob needs exactly one Master");
        } else if (Replicas("Master") != 1) {
          Error(replica_path_ + ".Master.replicas",
                absl::StrCat("must be 1, got ", Replicas("Master")));
        }
        break;
      case MPI_JOB:
        if (specs.count("Launcher") == 0) {
          Error(replica_path_ + ".Launcher", "required: an MPIJob needs one Launcher");
        } else if (Replicas("Launcher") != 1) {
          Error(replica_path_ + ".Launcher.replicas",
                absl::StrCat("must be 1, got ", Replicas("Launcher")));
        }
        if (spec.has_slots_per_worker()) {
          AtLeast("spec.slotsPerWorker", spec.slots_per_worker(), 1);
        }
        if (spec.has_mpi_clean_pod_policy() &&
            !In(spec.mpi_clean_pod_policy(), CleanPodPolicies())) {
          Error("spec.cleanPodPolicy", OneOf(CleanPodPolicies(), spec.mpi_clean_pod_policy()));
        }
        break;
      default:
        break;
    }
  }

  const TrainingJob& job_;
  const KindInfo* info_ = nullptr;
  std::string replica_path_;
  std::vector<FieldError> errors_;
};

}  // namespace

std::vector<FieldError> Validate(const TrainingJob& job) { return Validator(job).Run(); }

std::vector<FieldError> ValidateElasticMetrics(JobKind kind, const ElasticPolicy& policy) {
  std::vector<FieldError> errors;
  const std::string& text = policy.metrics_json();
  if (text.empty()) return errors;
  const std::string path = "spec.elasticPolicy.metrics";
  // Before parsing: the bound is what keeps a hostile list cheap.
  if (text.size() > kMaxElasticMetricsBytes) {
    errors.push_back({path, absl::StrCat("must be at most ", kMaxElasticMetricsBytes,
                                         " bytes of JSON, got ", text.size())});
    return errors;
  }
  const json metrics = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (metrics.is_discarded() || !metrics.is_array()) {
    errors.push_back({path, "must be a JSON array of autoscaling/v2 MetricSpecs"});
    return errors;
  }
  if (metrics.size() > kMaxElasticMetrics) {
    errors.push_back({path, absl::StrCat("must have at most ", kMaxElasticMetrics, " entries, got ",
                                         metrics.size())});
    return errors;
  }
  std::vector<std::string> types;
  for (const auto& [type, source] : MetricSources()) types.push_back(type);
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string item = absl::StrCat(path, "[", i, "]");
    const json& metric = metrics[i];
    if (!metric.is_object()) {
      errors.push_back({item, absl::StrCat("must be an object (an autoscaling/v2 MetricSpec), got ",
                                           metric.type_name())});
      continue;
    }
    if (kind != PYTORCH_JOB) continue;
    const auto type = metric.find("type");
    if (type == metric.end() || !type->is_string()) {
      errors.push_back(
          {item + ".type", absl::StrCat("required: one of ", absl::StrJoin(types, ", "))});
      continue;
    }
    const std::string& name = type->get_ref<const std::string&>();
    bool known = false;
    for (const auto& [source_type, source] : MetricSources()) {
      if (source_type != name) continue;
      known = true;
      const auto it = metric.find(source);
      if (it == metric.end() || !it->is_object()) {
        errors.push_back({absl::StrCat(item, ".", source),
                          absl::StrCat("required when type is ", name, ": an object")});
      }
    }
    if (!known) errors.push_back({item + ".type", OneOf(types, name)});
  }
  return errors;
}

absl::Status ValidateJob(const TrainingJob& job) { return FieldErrorsToStatus(Validate(job)); }

}  // namespace coach::api::v1
