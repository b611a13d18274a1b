#include "operator/backend/kube/kube_backend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/backend/kube/earlier_objects.h"
#include "operator/backend/kube/hpa.h"
#include "operator/backend/kube/object_fields.h"
#include "operator/backend/kube/pod_logs.h"
#include "operator/backend/kube/pod_observation.h"
#include "operator/backend/kube/scheduling_facts.h"
#include "operator/backend/kube/ssh_auth_keys.h"
#include "operator/model/kube_object.h"
#include "operator/model/pod_identity.h"
#include "operator/trainer/runtime_lookup.h"

namespace coach::backend::kube {

using coach::kubeclient::ResourceDescriptor;
using coach::kubeclient::WatchEvent;
using coach::kubeclient::WatchEventType;
using nlohmann::json;

std::string JobKeyOf(const model::Job& job) {
  return absl::StrCat(job.metadata().namespace_(), "/", job.metadata().name());
}

namespace {

// What a job's pods need to exist before they are created: what they mount (ConfigMaps but a
// TrainJob's runtime snapshot, which only the operator reads; Secrets; claims), the
// ServiceAccount and RBAC they run as, the PodGroup they join. Everything else (Services, the
// snapshot) is created beside the pods, in parallel.
bool NeededBeforePods(const model::KubeObject& object) {
  if (object.kind == "Pod" || object.kind == "Service") return false;
  return !(object.kind == "ConfigMap" &&
           absl::EndsWith(object.name, trainer::kRuntimeSnapshotSuffix));
}

// Whether an object with this job's label is the job's own: it names the job's uid among its
// ownerReferences, or names no owner (a claim its runtime retains), or the uid is unknown.
bool OwnedBy(const json& object, const std::string& uid) {
  const json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (uid.empty() || !refs.is_array() || refs.empty()) return true;
  for (const json& ref : refs) {
    if (StringField(ref, "uid") == uid) return true;
  }
  return false;
}

constexpr char kPodGroupVolcano[] = "scheduling.volcano.sh/v1beta1";
constexpr char kPodGroupSchedulerPlugins[] = "scheduling.x-k8s.io/v1alpha1";

void SortByName(std::vector<model::ObservedPod>& pods) {
  std::sort(pods.begin(), pods.end(), [](const model::ObservedPod& a, const model::ObservedPod& b) {
    return a.name < b.name;
  });
}

std::string ns_of(const json& meta) { return StringField(meta, "namespace"); }

std::string ObjectKey(const std::string& kind, const std::string& name) {
  return absl::StrCat(kind, "/", name);
}

}  // namespace

struct KubeBackend::KindState {
  std::string kind;
  ResourceDescriptor resource;
  bool enabled = true;  // false: the resource (PodGroup CRD) is not installed
  // Guarded by KubeBackend::mu_.
  std::map<std::string, json> objects;                  // "ns/name" -> trimmed object
  std::map<std::string, std::set<std::string>> by_job;  // "ns/job" -> names
  std::set<std::string> synced;                         // namespaces listed at least once
  std::string last_error;

  std::string JobKeyOfObject(const json& o) const {
    const std::string job = model::LabelOf(o, model::kLabelCoachJobName);
    if (job.empty()) return "";
    return absl::StrCat(StringField(Field(o, "metadata"), "namespace"), "/", job);
  }
  // Inserts or replaces; returns the job keys touched (old and new owner).
  void Upsert(const json& o, std::set<std::string>* jobs) {
    const json& meta = Field(o, "metadata");
    const std::string ns = StringField(meta, "namespace");
    const std::string name = StringField(meta, "name");
    const std::string key = absl::StrCat(ns, "/", name);
    Erase(key, jobs);
    json trimmed = Trim(o, kind == "Pod");
    // An HPA's spec is compared with the job's wish on every pass (TendHpa).
    if (kind == kHpaKind) trimmed["spec"] = Field(o, "spec");
    // A TrainJob's runtime snapshot is read from the cache (Observe): its content stays.
    if (kind == "ConfigMap" && absl::EndsWith(name, trainer::kRuntimeSnapshotSuffix)) {
      const json& runtime = Field(Field(o, "data"), trainer::kRuntimeSnapshotKey);
      if (runtime.is_string()) trimmed["data"][trainer::kRuntimeSnapshotKey] = runtime;
    }
    const std::string job_key = JobKeyOfObject(trimmed);
    if (!job_key.empty()) {
      by_job[job_key].insert(name);
      jobs->insert(job_key);
    }
    objects[key] = std::move(trimmed);
  }
  void Erase(const std::string& key, std::set<std::string>* jobs) {
    auto it = objects.find(key);
    if (it == objects.end()) return;
    const std::string job_key = JobKeyOfObject(it->second);
    if (!job_key.empty()) {
      auto j = by_job.find(job_key);
      if (j != by_job.end()) {
        j->second.erase(StringField(Field(it->second, "metadata"), "name"));
        if (j->second.empty()) by_job.erase(j);
      }
      jobs->insert(job_key);
    }
    objects.erase(it);
  }
  const json* Find(const std::string& ns, const std::string& name) const {
    auto it = objects.find(absl::StrCat(ns, "/", name));
    return it == objects.end() ? nullptr : &it->second;
  }
};

absl::StatusOr<std::unique_ptr<KubeBackend>> KubeBackend::Create(KubeBackendOptions options) {
  if (options.client == nullptr) return absl::InvalidArgumentError("KubeBackend: no client");
  if (options.create_parallelism < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "KubeBackend: create_parallelism must be >= 1, got ", options.create_parallelism));
  }
  const std::string& gang = options.gang_scheduler;
  if (!gang.empty() && gang != "none" && gang != "volcano" && gang != "scheduler-plugins") {
    return absl::InvalidArgumentError(absl::StrCat("KubeBackend: unknown gang scheduler \"", gang,
                                                   "\" (want volcano or scheduler-plugins)"));
  }
  std::unique_ptr<KubeBackend> backend(new KubeBackend(std::move(options)));
  return backend;
}

KubeBackend::KubeBackend(KubeBackendOptions options)
    : options_(std::move(options)), progress_(options_.progress) {
  // Every cache selects what Apply stamped: the job's name in coach's label.
  auto add = [this](ResourceDescriptor resource) {
    auto state = std::make_unique<KindState>();
    state->kind = resource.kind;
    state->resource = std::move(resource);
    kinds_.push_back(std::move(state));
  };
  namespace r = coach::kubeclient::resources;
  add(r::Pods());
  add(r::Services());
  add(r::ConfigMaps());
  add({"", "v1", "serviceaccounts", "ServiceAccount", true, false});
  add({"rbac.authorization.k8s.io", "v1", "roles", "Role", true, false});
  add({"rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, false});
  // A TrainJob runtime's volumeClaimPolicies.
  add({"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, true});
  // Elastic PyTorchJobs' autoscalers (hpa.h); skipped where not served or not allowed.
  add(HorizontalPodAutoscalers());
  if (options_.gang_scheduler == "volcano") {
    add(r::PodGroups());
  } else if (options_.gang_scheduler == "scheduler-plugins") {
    add({"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true, true});
  }
}

KubeBackend::~KubeBackend() { Stop(); }

KubeBackend::KindState* KubeBackend::StateFor(const std::string& kind) {
  for (auto& s : kinds_) {
    if (s->kind == kind) return s.get();
  }
  return nullptr;
}

const KubeBackend::KindState* KubeBackend::StateFor(const std::string& kind) const {
  for (const auto& s : kinds_) {
    if (s->kind == kind) return s.get();
  }
  return nullptr;
}

bool KubeBackend::WatchesLocked(const std::string& kind) const {
  const KindState* state = StateFor(kind);
  return state != nullptr && state->enabled;
}

const json* KubeBackend::CachedLocked(const std::string& kind, const std::string& ns,
                                      const std::string& name) const {
  const KindState* state = StateFor(kind);
  return state == nullptr ? nullptr : state->Find(ns, name);
}

void KubeBackend::SetChangeCallback(ChangeCallback callback) {
  absl::MutexLock lock(&mu_);
  callback_ = std::move(callback);
}

absl::Status KubeBackend::Start() {
  absl::MutexLock run_lock(&run_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::OkStatus();
  }
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  // Before the first list, so that the caches start with them.
  if (absl::StatusOr<EarlierObjectsLabelled> earlier =
          LabelEarlierOperatorObjects(options_.client, namespaces);
      !earlier.ok()) {
    spdlog::warn("kube backend: looking for pods and Services of an earlier operator: {}",
                 earlier.status().ToString());
  }
  for (auto& state_ptr : kinds_) {
    KindState* state = state_ptr.get();
    if (state->kind == "PodGroup") {
      if (absl::IsNotFound(ProbeList(state->resource, namespaces[0]))) {
        spdlog::warn(
            "kube backend: {} is not served (is the {} CRD installed?); PodGroups "
            "cannot be created",
            state->resource.GroupResource(), state->resource.ApiVersion());
        absl::MutexLock lock(&mu_);
        state->enabled = false;
        continue;
      }
    }
    if (state->kind == kHpaKind) {
      const absl::Status listed = ProbeList(state->resource, namespaces[0]);
      if (absl::IsNotFound(listed) || absl::IsPermissionDenied(listed)) {
        spdlog::warn(
            "kube backend: not watching {} ({}): elastic PyTorchJobs with metrics get no "
            "HorizontalPodAutoscaler; grant get, list, watch, create, patch and delete on it "
            "(the chart does)",
            state->resource.GroupResource(), listed.ToString());
        absl::MutexLock lock(&mu_);
        state->enabled = false;
        continue;
      }
    }
    {
      absl::MutexLock lock(&mu_);
      state->enabled = true;
      state->synced.clear();
    }
    for (const std::string& ns : namespaces) {
      coach::kubeclient::ReflectorOptions ro = options_.reflector;
      ro.label_selector = model::kLabelCoachJobName;
      coach::kubeclient::ReflectorHandlers handlers;
      handlers.on_replace = [this, state, ns](const std::vector<json>& items, const std::string&) {
        OnReplace(state, ns, items);
      };
      handlers.on_event = [this, state](const WatchEvent& event) { OnEvent(state, event); };
      handlers.on_error = [this, state](const absl::Status& status) {
        spdlog::warn("kube backend: {} watch: {}", state->resource.GroupResource(),
                     status.ToString());
        absl::MutexLock lock(&mu_);
        state->last_error = status.ToString();
      };
      StartReflector(state->resource, ns, ro, std::move(handlers));
    }
  }
  StartNodeWatch();
  StartSchedulingWatches(namespaces);
  StartQueueWatches(namespaces);
  const size_t want = namespaces.size();
  auto all_synced = [this, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& s : kinds_) {
      if (s->enabled && s->synced.size() < want) return false;
    }
    return !watch_nodes_ || nodes_synced_;
  };
  std::string missing;
  {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&all_synced), options_.sync_timeout)) {
      started_ = true;
      started_at_ = Now();
      spdlog::info("kube backend: caches synced ({} kinds, namespaces: {})", kinds_.size(),
                   options_.namespaces.empty() ? "all" : absl::StrJoin(options_.namespaces, ","));
      return absl::OkStatus();
    }
    for (const auto& s : kinds_) {
      if (s->enabled && s->synced.size() < want) {
        absl::StrAppend(&missing, missing.empty() ? "" : "; ", s->resource.GroupResource(),
                        s->last_error.empty() ? "" : ": ", s->last_error);
      }
    }
    if (watch_nodes_ && !nodes_synced_) {
      absl::StrAppend(&missing, missing.empty() ? "" : "; ", "nodes",
                      nodes_error_.empty() ? "" : ": ", nodes_error_);
    }
  }
  for (auto& r : reflectors_) r->Stop();
  for (auto& t : threads_) t.join();
  reflectors_.clear();
  threads_.clear();
  return absl::UnavailableError(absl::StrCat("kube backend: caches did not sync within ",
                                             absl::FormatDuration(options_.sync_timeout), " (",
                                             missing, ")"));
}

void KubeBackend::Stop() {
  absl::MutexLock run_lock(&run_mu_);
  for (auto& r : reflectors_) r->Stop();
  for (auto& t : threads_) t.join();
  reflectors_.clear();
  threads_.clear();
  absl::MutexLock lock(&mu_);
  started_ = false;
}

void KubeBackend::OnReplace(KindState* state, const std::string& ns,
                            const std::vector<json>& items) {
  std::set<std::string> jobs;
  {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> old_keys;
    for (const auto& [key, object] : state->objects) {
      if (ns.empty() || StringField(Field(object, "metadata"), "namespace") == ns) {
        old_keys.push_back(key);
      }
    }
    for (const std::string& key : old_keys) state->Erase(key, &jobs);
    for (const json& item : items) state->Upsert(item, &jobs);
    if (state->kind == kHpaKind) {
      // HPAs that went while the watch was down (with their jobs) take what was written along.
      for (auto it = hpa_written_.begin(); it != hpa_written_.end();) {
        const size_t slash = it->first.find('/');
        const bool kept =
            state->Find(it->first.substr(0, slash), it->first.substr(slash + 1)) != nullptr;
        it = kept ? std::next(it) : hpa_written_.erase(it);
      }
    }
    if (state->kind == "Pod") {
      // Pods that went while the watch was down take their reports with them.
      progress_.Retain([state](const std::string& key, const std::string& uid) {
        auto it = state->objects.find(key);
        return it != state->objects.end() &&
               StringField(Field(it->second, "metadata"), "uid") == uid;
      });
    }
    state->synced.insert(ns);
    for (const std::string& job : jobs) SettleLocked(job);
  }
  Notify(jobs);
}

void KubeBackend::OnEvent(KindState* state, const WatchEvent& event) {
  std::set<std::string> jobs;
  bool quiet = false;
  {
    absl::MutexLock lock(&mu_);
    const json& meta = Field(event.object, "metadata");
    const std::string name = StringField(meta, "name");
    const std::string key = absl::StrCat(StringField(meta, "namespace"), "/", name);
    const std::string job_key = state->JobKeyOfObject(event.object);
    if (event.type == WatchEventType::kDeleted) {
      state->Erase(key, &jobs);
      if (state->kind == "Pod") progress_.Forget(key);
      // What was written to an HPA matters while it exists (a deleted job's goes with it).
      if (state->kind == kHpaKind) hpa_written_.erase(key);
    } else {
      if (state->kind == "Pod") ObserveScheduled(state->Find(ns_of(meta), name), event.object);
      // The autoscaler writes an HPA's status on every sync; what the cache keeps of it (its
      // spec, labels, owners) is all a pass reads, so a status change wakes no job.
      const json* before = state->kind == kHpaKind ? state->Find(ns_of(meta), name) : nullptr;
      const bool compare = before != nullptr;  // Upsert replaces what `before` points to
      json kept = compare ? *before : json();
      state->Upsert(event.object, &jobs);
      if (compare) {
        json after = *state->Find(ns_of(meta), name);
        kept["metadata"].erase("resourceVersion");
        after["metadata"].erase("resourceVersion");
        quiet = kept == after;
      }
    }
    if (!job_key.empty()) {
      jobs.insert(job_key);
      expectations_.Observed(job_key, ObjectKey(state->kind, name),
                             event.type == WatchEventType::kDeleted, Deleting(event.object));
    }
  }
  if (!quiet) Notify(jobs);
}

void KubeBackend::Notify(const std::set<std::string>& job_keys) {
  ChangeCallback callback;
  {
    absl::MutexLock lock(&mu_);
    callback = callback_;
  }
  if (!callback) return;
  for (const std::string& key : job_keys) {
    const size_t slash = key.find('/');
    callback(key.substr(0, slash), key.substr(slash + 1));
  }
}

void KubeBackend::ExportMetrics(coach::metrics::Registry* registry) {
  schedule_seconds_.store(registry->Histogram(
      "coach_replica_schedule_seconds",
      "Replica pod creation to PodScheduled=True (API server times), by the pod's "
      "karpenter.sh/nodepool selector",
      {0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800}, {"nodepool"}));
  progress_reports_.store(registry->Counter(
      "coach_progress_reports_total",
      "Progress reports of replica pods (ReportProgress) by outcome: accepted, dropped (within "
      "a second of the pod's last), refused (no such pod of a job here), full (too many pods)",
      {"outcome"}));
}

void KubeBackend::ObserveScheduled(const json* before, const json& after) {
  coach::metrics::Family* family = schedule_seconds_.load();
  if (family == nullptr) return;
  if (before != nullptr && ScheduledAt(*before).has_value()) return;
  const std::optional<absl::Time> at = ScheduledAt(after);
  if (!at.has_value()) return;
  const absl::Time created = ParseTime(StringField(Field(after, "metadata"), "creationTimestamp"));
  if (created == absl::InfinitePast() || *at < created) return;
  family->Observe({PodNodePool(after)}, absl::ToDoubleSeconds(*at - created));
}

std::set<std::string> KubeBackend::JobsOfPodsLocked(const std::set<std::string>& pod_keys) const {
  std::set<std::string> jobs;
  const KindState* pods = StateFor("Pod");
  if (pods == nullptr) return jobs;
  for (const std::string& key : pod_keys) {
    auto it = pods->objects.find(key);
    if (it == pods->objects.end()) continue;
    const std::string job = pods->JobKeyOfObject(it->second);
    if (!job.empty()) jobs.insert(job);
  }
  return jobs;
}

std::set<std::string> KubeBackend::JobsOnNodesLocked(const std::set<std::string>& nodes) const {
  std::set<std::string> jobs;
  const KindState* pods = StateFor("Pod");
  if (pods == nullptr || nodes.empty()) return jobs;
  for (const auto& [key, pod] : pods->objects) {
    if (nodes.count(StringField(Field(pod, "spec"), "nodeName")) == 0) continue;
    const std::string job = pods->JobKeyOfObject(pod);
    if (!job.empty()) jobs.insert(job);
  }
  return jobs;
}

void KubeBackend::StartNodeWatch() {
  const ResourceDescriptor resource = coach::kubeclient::resources::Nodes();
  const absl::Status listed = ProbeList(resource, "");
  {
    absl::MutexLock lock(&mu_);
    nodes_synced_ = false;
    nodes_error_.clear();
    watch_nodes_ = !absl::IsPermissionDenied(listed);
  }
  if (absl::IsPermissionDenied(listed)) {
    // A reflector would retry and log for ever; the job runs on, only without this fact.
    spdlog::warn(
        "kube backend: cannot list nodes ({}): a pod on a NotReady or deleted node is not "
        "reported as on a lost node, so its replacement waits for the pod garbage collector; "
        "grant list and watch on nodes (the chart's ClusterRole <release>-nodes)",
        listed.ToString());
    return;
  }
  coach::kubeclient::ReflectorOptions ro = options_.reflector;
  ro.label_selector = "";
  ro.field_selector = "";
  coach::kubeclient::ReflectorHandlers handlers;
  handlers.transform = [](json node) { return TrimNode(node); };
  handlers.on_replace = [this](const std::vector<json>& items, const std::string&) {
    std::set<std::string> jobs;
    {
      absl::MutexLock lock(&mu_);
      jobs = JobsOnNodesLocked(nodes_.Replace(items));
      nodes_synced_ = true;
    }
    Notify(jobs);
  };
  handlers.on_event = [this](const WatchEvent& event) {
    std::set<std::string> jobs;
    {
      absl::MutexLock lock(&mu_);
      jobs = JobsOnNodesLocked(nodes_.OnNode(event.object, event.type == WatchEventType::kDeleted));
    }
    Notify(jobs);
  };
  handlers.on_error = [this](const absl::Status& status) {
    spdlog::warn("kube backend: nodes watch: {}", status.ToString());
    absl::MutexLock lock(&mu_);
    nodes_error_ = status.ToString();
  };
  StartReflector(resource, "", ro, std::move(handlers));
}

void KubeBackend::StartSchedulingWatches(const std::vector<std::string>& namespaces) {
  namespace r = coach::kubeclient::resources;
  struct Watch {
    ResourceDescriptor resource;
    std::vector<std::string> namespaces;
    std::string field_selector;
    bool nodeclaims;
  };
  const std::vector<Watch> watches = {
      {r::Events(), namespaces, kKarpenterPodEventSelector, false},
      {{"karpenter.sh", "v1", "nodeclaims", "NodeClaim", false, true}, {""}, "", true},
  };
  for (const Watch& w : watches) {
    // A cluster without Karpenter's CRDs, or RBAC without list on them.
    const absl::Status listed = ProbeList(w.resource, w.namespaces[0], w.field_selector);
    if (absl::IsNotFound(listed) || absl::IsPermissionDenied(listed)) {
      spdlog::info("kube backend: not watching {} ({}): Pending replicas are explained without {}",
                   w.resource.GroupResource(), listed.ToString(),
                   w.nodeclaims ? "NodeClaim progress" : "Karpenter's pod events");
      continue;
    }
    for (const std::string& ns : w.namespaces) {
      coach::kubeclient::ReflectorOptions ro = options_.reflector;
      ro.label_selector = "";
      ro.field_selector = w.field_selector;
      coach::kubeclient::ReflectorHandlers handlers;
      const bool nodeclaims = w.nodeclaims;
      handlers.on_replace = [this, ns, nodeclaims](const std::vector<json>& items,
                                                   const std::string&) {
        std::set<std::string> jobs;
        {
          absl::MutexLock lock(&mu_);
          jobs = JobsOfPodsLocked(nodeclaims ? facts_.ReplaceNodeClaims(items)
                                             : facts_.ReplaceEvents(ns, items));
        }
        Notify(jobs);
      };
      handlers.on_event = [this, nodeclaims](const WatchEvent& event) {
        const bool deleted = event.type == WatchEventType::kDeleted;
        std::set<std::string> jobs;
        {
          absl::MutexLock lock(&mu_);
          jobs = JobsOfPodsLocked(nodeclaims ? facts_.OnNodeClaim(event.object, deleted)
                                             : facts_.OnEvent(event.object, deleted));
        }
        Notify(jobs);
      };
      const std::string what = w.resource.GroupResource();
      handlers.on_error = [what](const absl::Status& status) {
        spdlog::warn("kube backend: {} watch: {}", what, status.ToString());
      };
      StartReflector(w.resource, ns, ro, std::move(handlers));
    }
  }
}

absl::Status KubeBackend::ProbeList(const ResourceDescriptor& resource, const std::string& ns,
                                    const std::string& field_selector) const {
  coach::kubeclient::ListOptions probe;
  probe.limit = 1;
  probe.field_selector = field_selector;
  return options_.client->List(resource, ns, probe).status();
}

void KubeBackend::StartReflector(const coach::kubeclient::ResourceDescriptor& resource,
                                 const std::string& ns,
                                 const coach::kubeclient::ReflectorOptions& options,
                                 coach::kubeclient::ReflectorHandlers handlers) {
  auto reflector = std::make_unique<coach::kubeclient::Reflector>(options_.client, resource, ns,
                                                                  options, std::move(handlers));
  coach::kubeclient::Reflector* raw = reflector.get();
  reflectors_.push_back(std::move(reflector));
  threads_.emplace_back([raw] { raw->Run(); });
}

void KubeBackend::Raise(const std::string& job_key, const std::string& object_key, Expectation e) {
  absl::MutexLock lock(&mu_);
  expectations_.Raise(job_key, object_key, std::move(e));
}

void KubeBackend::Lower(const std::string& job_key, const std::string& object_key) {
  absl::MutexLock lock(&mu_);
  expectations_.Lower(job_key, object_key);
}

void KubeBackend::SettleLocked(const std::string& job_key) {
  const std::string ns = job_key.substr(0, job_key.find('/'));
  expectations_.Settle(job_key, Now(), options_.expectation_timeout,
                       [&](const std::string& kind, const std::string& name) -> const json* {
                         const KindState* state = StateFor(kind);
                         return state == nullptr ? nullptr : state->Find(ns, name);
                       });
}

absl::Status KubeBackend::Admit(const model::Job&) { return absl::OkStatus(); }

std::shared_ptr<const model::AddressPlan> KubeBackend::AddressPlanFor(const model::Job&) {
  return nullptr;
}

absl::StatusOr<model::ObservedState> KubeBackend::Observe(const model::Job& job) {
  bool started;
  {
    absl::MutexLock lock(&mu_);
    started = started_;
  }
  // Only the leader's backend starts its caches; the other replicas still serve the API
  // (describe), so they ask the API server for the job's pods, as they do for logs.
  ASSIGN_OR_RETURN(model::ObservedState observed,
                   started ? ObserveCached(job) : ObserveFromServer(job));
  RETURN_IF_ERROR(ObserveRuntime(job, observed));
  if (started) {
    // Only an API server that did not answer holds the pass up (it is retried with backoff): a
    // refusal (RBAC, an HPA the server finds invalid) must not stop the job's replicas.
    if (absl::Status tended = TendHpa(job); !tended.ok()) {
      const std::string what = absl::StrCat("HorizontalPodAutoscaler ", JobKeyOf(job), ": ");
      if (absl::IsUnavailable(tended) || absl::IsDeadlineExceeded(tended)) {
        return absl::Status(tended.code(), absl::StrCat(what, tended.message()));
      }
      spdlog::warn("kube backend: {}{}", what, tended.ToString());
    }
  }
  return observed;
}

absl::Status KubeBackend::ObserveRuntime(const model::Job& job, model::ObservedState& observed) {
  const std::string& ns = job.metadata().namespace_();
  trainer::RuntimeSource source;
  source.snapshot = [&]() -> absl::StatusOr<std::optional<std::string>> {
    const std::string snapshot = trainer::RuntimeSnapshotName(job);
    auto text_of = [](const json& cm) {
      const json& text = Field(Field(cm, "data"), trainer::kRuntimeSnapshotKey);
      return text.is_string() ? text.get<std::string>() : "";
    };
    {
      absl::ReaderMutexLock lock(&mu_);
      if (started_) {
        const KindState* config_maps = StateFor("ConfigMap");
        if (config_maps == nullptr) return std::nullopt;
        const json* cm = config_maps->Find(ns, snapshot);
        if (cm == nullptr) return std::nullopt;
        return text_of(*cm);
      }
    }
    absl::StatusOr<json> cm =
        options_.client->Get(coach::kubeclient::resources::ConfigMaps(), ns, snapshot);
    if (absl::IsNotFound(cm.status())) return std::nullopt;
    if (!cm.ok()) return cm.status();
    return text_of(*cm);
  };
  source.find = [&](const trainer::RuntimeReference& ref) -> absl::StatusOr<std::optional<json>> {
    return coach::kubeclient::GetTrainingRuntime(*options_.client, ref.kind, ns, ref.name);
  };
  source.where = [&](const trainer::RuntimeReference& ref) {
    return ref.cluster() ? std::string() : absl::StrCat(" in namespace ", ns);
  };
  return trainer::ObserveRuntime(job, source, observed);
}

absl::StatusOr<model::ObservedState> KubeBackend::ObserveCached(const model::Job& job) {
  const std::string job_key = JobKeyOf(job);
  const std::string& ns = job.metadata().namespace_();
  const std::string default_container = DefaultContainerName(job);
  model::ObservedState observed;
  absl::MutexLock lock(&mu_);
  if (!started_) return absl::UnavailableError("kube backend: waiting for the cache (not started)");
  SettleLocked(job_key);
  const Expectations::ObjectMap& expected = expectations_.Of(job_key);
  for (const auto& state : kinds_) {
    std::set<std::string> seen;
    auto names = state->by_job.find(job_key);
    if (names != state->by_job.end()) {
      for (const std::string& name : names->second) {
        const json* object = state->Find(ns, name);
        if (object == nullptr || !OwnedBy(*object, job.metadata().uid())) continue;
        seen.insert(name);
        if (state->kind == "Pod") {
          model::ObservedPod pod = ToObservedPod(job, *object, default_container);
          pod.waiting = facts_.Explain(*object);
          const std::string node = StringField(Field(*object, "spec"), "nodeName");
          pod.node_lost = nodes_.Lost(node);
          // The pod's own notice (its deletion's grace, its eviction) is the sharper one.
          if (pod.notice.empty() && pod.phase == model::PodPhase::kRunning) {
            pod.notice = nodes_.Notice(node);
          }
          pod.progress = progress_.Get(absl::StrCat(ns, "/", name), pod.uid);
          pod.launch = progress_.Launch(absl::StrCat(ns, "/", name), pod.uid);
          auto e = expected.find(ObjectKey("Pod", name));
          if (e != expected.end() && !e->second.create) {
            pod.deleting = true;
            // The cache has not shown the deletionTimestamp yet: the delete was sent then.
            if (pod.deletion_requested == absl::InfinitePast()) {
              pod.deletion_requested = e->second.raised;
            }
          }
          observed.pods.push_back(std::move(pod));
        } else {
          observed.objects.push_back({state->kind, name});
        }
      }
    }
    // Expected creations the cache has not shown yet count as existing.
    const std::string prefix = state->kind + "/";
    for (auto e = expected.lower_bound(prefix);
         e != expected.end() && absl::StartsWith(e->first, prefix); ++e) {
      const std::string name = e->first.substr(prefix.size());
      if (!e->second.create || seen.count(name) > 0 ||
          !OwnedBy(e->second.body, job.metadata().uid())) {
        continue;
      }
      if (state->kind == "Pod") {
        model::ObservedPod pod = ToObservedPod(job, e->second.body, default_container);
        pod.name = name;
        pod.phase = model::PodPhase::kPending;
        pod.created = e->second.raised;
        observed.pods.push_back(std::move(pod));
      } else {
        observed.objects.push_back({state->kind, name});
      }
    }
  }
  if (auto secrets = created_secrets_.find(job_key); secrets != created_secrets_.end()) {
    for (const std::string& name : secrets->second) observed.objects.push_back({"Secret", name});
  }
  SortByName(observed.pods);
  observed.progress_since = started_at_;
  if (const api::v1::KindInfo* kind = api::v1::FindKind(job.kind()); kind != nullptr) {
    observed.queue =
        queues_.Explain(ns, std::string(kind->name), job.metadata().name(), job.metadata().uid());
  }
  return observed;
}

std::optional<KubeBackend::PodJob> KubeBackend::CachedPodJobLocked(const std::string& ns,
                                                                   const std::string& name,
                                                                   const std::string& uid) const {
  const KindState* pods = StateFor("Pod");
  const json* pod = pods == nullptr ? nullptr : pods->Find(ns, name);
  if (pod == nullptr || StringField(Field(*pod, "metadata"), "uid") != uid) return std::nullopt;
  PodJob job{pods->JobKeyOfObject(*pod), ""};
  if (job.key.empty()) return std::nullopt;
  // The job owns its pods (one controller reference): its uid keys its checkpoint requests.
  const json& owners = Field(Field(*pod, "metadata"), "ownerReferences");
  if (owners.is_array() && !owners.empty()) job.uid = StringField(owners[0], "uid");
  return job;
}

absl::StatusOr<std::vector<json>> KubeBackend::ListJobPods(const std::string& ns,
                                                           const std::string& job_name,
                                                           const std::string& pod_name) {
  coach::kubeclient::ListOptions list;
  list.label_selector = absl::StrCat(model::kLabelCoachJobName, "=", job_name);
  if (!pod_name.empty()) list.field_selector = absl::StrCat("metadata.name=", pod_name);
  ASSIGN_OR_RETURN(coach::kubeclient::ListResult listed,
                   options_.client->List(coach::kubeclient::resources::Pods(), ns, list));
  return std::move(listed.items);
}

absl::StatusOr<model::ObservedState> KubeBackend::ObserveFromServer(const model::Job& job) {
  ASSIGN_OR_RETURN(std::vector<json> pods,
                   ListJobPods(job.metadata().namespace_(), job.metadata().name(), ""));
  const std::string default_container = DefaultContainerName(job);
  const std::string& uid = job.metadata().uid();
  model::ObservedState observed;
  for (const json& pod : pods) {
    // A job of another kind may share the name (and so the label): keep this job's own pods.
    if (!OwnedBy(pod, uid)) continue;
    model::ObservedPod p = ToObservedPod(job, pod, default_container);
    {
      absl::MutexLock lock(&mu_);
      p.waiting = facts_.Explain(pod);
    }
    observed.pods.push_back(std::move(p));
  }
  SortByName(observed.pods);
  return observed;
}

absl::Status KubeBackend::Apply(const model::Job& job, const model::Action& action) {
  return ApplyOne(job, action);
}

absl::Status KubeBackend::ApplyOne(const model::Job& job, const model::Action& action) {
  const model::KubeObject& object = action.object;
  if (action.type == model::Action::Type::kDeleteJob) {
    return absl::InvalidArgumentError("kube backend: kDeleteJob is the controller's");
  }
  if (action.force && (action.type != model::Action::Type::kDelete || object.kind != "Pod")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kube backend: force applies to deleting a Pod only, not to ", object.kind, " ",
        object.name, action.type == model::Action::Type::kCreate ? " (a create)" : ""));
  }
  if (object.kind == "Secret") return ApplySecret(job, action);
  ResourceDescriptor resource;
  {
    absl::MutexLock lock(&mu_);
    const KindState* state = StateFor(object.kind);
    if (state == nullptr) {
      if (object.kind == "PodGroup") {
        return absl::InvalidArgumentError(
            "kube backend: a PodGroup without a gang scheduler configured (--gang-scheduler)");
      }
      return absl::InvalidArgumentError(
          absl::StrCat("kube backend: does not manage objects of kind ", object.kind));
    }
    if (!state->enabled) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the PodGroup CRD (", state->resource.GroupResource(), ", ", state->resource.ApiVersion(),
          ") is not installed; install the gang scheduler or run without --gang-scheduler"));
    }
    resource = state->resource;
  }
  // The cache's descriptor, not object.api_version: the reconciler writes "v1" into every
  // delete action but a PodGroup's (Role and RoleBinding are rbac.authorization.k8s.io).
  const std::string ns =
      object.namespace_.empty() ? job.metadata().namespace_() : object.namespace_;
  const std::string job_key = JobKeyOf(job);
  const std::string object_key = ObjectKey(object.kind, object.name);

  if (action.type == model::Action::Type::kCreate) {
    json body = object.body;
    body["metadata"]["labels"][model::kLabelCoachJobName] = job.metadata().name();
    if (!body["metadata"].contains("namespace")) body["metadata"]["namespace"] = ns;
    Raise(job_key, object_key, Expectation{true, Now(), body});
    if (options_.request_hook) options_.request_hook(action, true);
    absl::StatusOr<json> created = options_.client->Create(resource, ns, body);
    if (options_.request_hook) options_.request_hook(action, false);
    if (created.ok()) return absl::OkStatus();
    if (absl::IsAlreadyExists(created.status())) {
      // A cache that already holds the object sends no further event for it: settle now.
      absl::MutexLock lock(&mu_);
      SettleLocked(job_key);
      return absl::OkStatus();
    }
    Lower(job_key, object_key);
    return created.status();
  }
  Raise(job_key, object_key, Expectation{false, Now(), json()});
  coach::kubeclient::DeleteOptions options;
  options.propagation = coach::kubeclient::PropagationPolicy::kBackground;
  if (std::string uid = StringField(Field(object.body, "metadata"), "uid"); !uid.empty()) {
    options.precondition_uid = std::move(uid);
  }
  if (action.force) {
    options.grace_period_seconds = 0;
    spdlog::info("kube backend: force-deleting pod {}/{} (grace period 0{})", ns, object.name,
                 options.precondition_uid ? ", uid " + *options.precondition_uid : "");
  }
  if (options_.request_hook) options_.request_hook(action, true);
  absl::Status deleted = options_.client->Delete(resource, ns, object.name, options);
  if (options_.request_hook) options_.request_hook(action, false);
  if (deleted.ok()) {
    // Its coach-launch, on the SIGTERM that follows, waits for no checkpoint request.
    if (object.kind == "Pod" && options.precondition_uid) {
      progress_.MarkStopping(absl::StrCat(ns, "/", object.name), *options.precondition_uid);
    }
    return absl::OkStatus();
  }
  Lower(job_key, object_key);
  // Aborted: the UID precondition failed, so the instance the reconciler meant is gone
  // already and the name belongs to a newer one, which stays.
  if (absl::IsAborted(deleted) && options.precondition_uid) {
    spdlog::debug("kube backend: {} {}/{} is another instance now; not deleted", object.kind, ns,
                  object.name);
    return absl::OkStatus();
  }
  return absl::IsNotFound(deleted) ? absl::OkStatus() : deleted;
}

absl::Status KubeBackend::ApplySecret(const model::Job& job, const model::Action& action) {
  const model::KubeObject& object = action.object;
  if (action.type != model::Action::Type::kCreate) {
    // Owned by the job: the garbage collector deletes it with the job.
    return absl::InvalidArgumentError(
        absl::StrCat("kube backend: Secrets are only created (", object.name, ")"));
  }
  const std::string ns =
      object.namespace_.empty() ? job.metadata().namespace_() : object.namespace_;
  json body = object.body;
  body["metadata"]["labels"][model::kLabelCoachJobName] = job.metadata().name();
  body["metadata"]["namespace"] = ns;
  RETURN_IF_ERROR(FillSshAuthSecret(body));
  const ResourceDescriptor secrets{"", "v1", "secrets", "Secret", true, false};
  if (options_.request_hook) options_.request_hook(action, true);
  absl::StatusOr<json> created = options_.client->Create(secrets, ns, body);
  if (options_.request_hook) options_.request_hook(action, false);
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
    // The API server's message, never the body: it holds the private key.
    return created.status();
  }
  absl::MutexLock lock(&mu_);
  created_secrets_[JobKeyOf(job)].insert(object.name);
  return absl::OkStatus();
}

bool KubeBackend::Busy(absl::Duration linger) const {
  if (applies_in_flight_.load() > 0) return true;
  const int64_t last = last_apply_end_ns_.load();
  return last > 0 && Now() - absl::FromUnixNanos(last) < linger;
}

absl::Status KubeBackend::ApplyAll(const model::Job& job, const std::vector<model::Action>& actions,
                                   std::vector<absl::Status>* results) {
  struct InFlight {
    KubeBackend* self;
    explicit InFlight(KubeBackend* b) : self(b) { ++self->applies_in_flight_; }
    ~InFlight() {
      self->last_apply_end_ns_ = absl::ToUnixNanos(self->Now());
      --self->applies_in_flight_;
    }
  } in_flight(this);
  std::vector<absl::Status> local(actions.size(),
                                  absl::CancelledError("not attempted: an earlier action failed"));
  std::vector<size_t> first, parallel;
  for (size_t i = 0; i < actions.size(); ++i) {
    (NeededBeforePods(actions[i].object) ? first : parallel).push_back(i);
  }
  auto finish = [&](absl::Status status) {
    if (results != nullptr) *results = local;
    return status;
  };
  // What the pods need first (NeededBeforePods), one at a time, in order.
  for (size_t i : first) {
    local[i] = ApplyOne(job, actions[i]);
    if (!local[i].ok()) return finish(AnnotateAction(actions[i], local[i]));
  }
  if (parallel.size() == 1) {
    local[parallel[0]] = ApplyOne(job, actions[parallel[0]]);
  } else if (!parallel.empty()) {
    const size_t workers =
        std::min(parallel.size(), static_cast<size_t>(options_.create_parallelism));
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&] {
        for (size_t n = next++; n < parallel.size(); n = next++) {
          local[parallel[n]] = ApplyOne(job, actions[parallel[n]]);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  int failed = 0;
  absl::Status first_error;
  for (size_t i : parallel) {
    if (local[i].ok()) continue;
    if (++failed == 1) first_error = AnnotateAction(actions[i], local[i]);
  }
  if (failed > 1) {
    first_error = absl::Status(
        first_error.code(),
        absl::StrCat(first_error.message(), " (and ", failed - 1, " more failed action(s))"));
  }
  return finish(first_error);
}

absl::Status KubeBackend::Forget(const model::Job& job) {
  const std::string job_key = JobKeyOf(job);
  const std::string& ns = job.metadata().namespace_();
  std::vector<std::pair<ResourceDescriptor, std::string>> victims;
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> keys;
    created_secrets_.erase(job_key);
    hpa_written_.erase(job_key);
    for (const auto& state : kinds_) {
      // A claim the runtime retains (retentionPolicy Retain: no owner) outlives its job; one it
      // deletes is the garbage collector's, through its owner.
      if (!state->enabled || state->kind == "PersistentVolumeClaim") continue;
      auto names = state->by_job.find(job_key);
      if (names != state->by_job.end()) {
        for (const std::string& name : names->second) {
          if (keys.insert(ObjectKey(state->kind, name)).second) {
            victims.emplace_back(state->resource, name);
          }
        }
      }
    }
    for (const auto& [key, e] : expectations_.Of(job_key)) {
      if (!e.create || !keys.insert(key).second) continue;
      const size_t slash = key.find('/');
      const KindState* state = StateFor(key.substr(0, slash));
      if (state != nullptr && state->enabled && state->kind != "PersistentVolumeClaim")
        victims.emplace_back(state->resource, key.substr(slash + 1));
    }
  }
  // Pods first: their services and the rest are only useful while pods run.
  std::stable_sort(victims.begin(), victims.end(), [](const auto& a, const auto& b) {
    return (a.first.kind == "Pod") > (b.first.kind == "Pod");
  });
  coach::kubeclient::DeleteOptions options;
  options.propagation = coach::kubeclient::PropagationPolicy::kBackground;
  absl::Status first_error;
  for (const auto& [resource, name] : victims) {
    absl::Status deleted = options_.client->Delete(resource, ns, name, options);
    if (!deleted.ok() && !absl::IsNotFound(deleted) && first_error.ok()) {
      first_error = absl::Status(deleted.code(), absl::StrCat("delete ", resource.kind, " ", name,
                                                              ": ", deleted.message()));
    }
  }
  {
    absl::MutexLock lock(&directives_mu_);
    directives_.erase(job_key);
  }
  if (first_error.ok()) {
    absl::MutexLock lock(&mu_);
    expectations_.Forget(job_key);
  }
  return first_error;
}

absl::Status KubeBackend::StreamLogs(const model::Job& job, const LogOptions& options,
                                     const LogSink& sink, const std::atomic<bool>& cancelled) {
  const std::string& ns = job.metadata().namespace_();
  const std::string& job_name = job.metadata().name();
  if (options.attempt && *options.attempt != job.status().coach().attempt()) {
    // Pods are recreated for each attempt: an earlier one's live only where they were kept.
    return absl::NotFoundError(absl::StrCat("attempt ", *options.attempt, " of ", ns, "/", job_name,
                                            " has no pods any more"));
  }
  const std::string default_container = DefaultContainerName(job);
  const std::string wanted =
      options.replica.empty() ? "" : absl::StrCat(job_name, "-", options.replica);
  // The job's pods: the leader reads its cache; a replica that does not lead has no started
  // backend and so no cache, and asks the API server, so that every replica serves logs.
  std::vector<json> pods;
  bool cached;
  {
    absl::MutexLock lock(&mu_);
    cached = started_;
    if (cached) {
      const KindState* state = StateFor("Pod");
      if (!wanted.empty()) {
        if (const json* pod = state->Find(ns, wanted)) pods.push_back(*pod);
      } else if (auto names = state->by_job.find(absl::StrCat(ns, "/", job_name));
                 names != state->by_job.end()) {
        for (const std::string& name : names->second) {
          if (const json* pod = state->Find(ns, name)) pods.push_back(*pod);
        }
      }
    }
  }
  if (!cached) {
    ASSIGN_OR_RETURN(pods, ListJobPods(ns, job_name, wanted));
  }
  return StreamPodLogs(options_.client, ns, job_name, default_container, pods, wanted, options,
                       sink, cancelled);
}

std::map<std::string, std::string> KubeBackend::PendingExpectations(const std::string& ns,
                                                                    const std::string& name) const {
  std::map<std::string, std::string> out;
  absl::MutexLock lock(&mu_);
  const_cast<KubeBackend*>(this)->SettleLocked(absl::StrCat(ns, "/", name));
  for (const auto& [key, e] : expectations_.Of(absl::StrCat(ns, "/", name))) {
    out[key] = e.create ? "create" : "delete";
  }
  return out;
}

size_t KubeBackend::CachedCount(const std::string& kind) const {
  absl::MutexLock lock(&mu_);
  const KindState* state = StateFor(kind);
  return state == nullptr ? 0 : state->objects.size();
}

}  // namespace coach::backend::kube
