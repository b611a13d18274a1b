#include "operator/backend/kube/queue_facts.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "operator/backend/kube/object_fields.h"

namespace coach::backend::kube {

namespace {

using nlohmann::json;

// The owner reference Kueue's job integrations set: controller true, on one of coach's kinds.
const json* CoachOwner(const json& meta) {
  const json& refs = Field(meta, "ownerReferences");
  if (!refs.is_array()) return nullptr;
  for (const json& ref : refs) {
    if (!ref.is_object()) continue;
    const json& controller = Field(ref, "controller");
    if (!controller.is_boolean() || !controller.get<bool>()) continue;
    const std::string api = StringField(ref, "apiVersion");
    if (absl::StartsWith(api, "kubeflow.org/") || absl::StartsWith(api, "trainer.kubeflow.org/")) {
      return &ref;
    }
  }
  return nullptr;
}

const json* FindCondition(const json& status, const char* type) {
  const json& conds = Field(status, "conditions");
  if (!conds.is_array()) return nullptr;
  for (const json& c : conds) {
    if (c.is_object() && StringField(c, "type") == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const json* condition) {
  return condition != nullptr && StringField(*condition, "status") == "True";
}

std::string Key(const std::string& ns, const std::string& name) {
  return absl::StrCat(ns, "/", name);
}

}  // namespace

std::optional<WorkloadFacts> ParseWorkload(const json& workload) {
  const json& meta = Field(workload, "metadata");
  const json* owner = CoachOwner(meta);
  const std::string name = StringField(meta, "name");
  if (owner == nullptr || name.empty()) return std::nullopt;
  WorkloadFacts f;
  f.ns = StringField(meta, "namespace");
  f.owner_kind = StringField(*owner, "kind");
  f.owner_name = StringField(*owner, "name");
  f.owner_uid = StringField(*owner, "uid");
  if (f.owner_name.empty()) return std::nullopt;
  f.created = StringField(meta, "creationTimestamp");
  f.deleting = Deleting(workload);
  const json& spec = Field(workload, "spec");
  const json& status = Field(workload, "status");
  model::ObservedState::Queue& q = f.queue;
  q.workload = name;
  q.local_queue = StringField(spec, "queueName");
  const json& active = Field(spec, "active");
  q.active = !active.is_boolean() || active.get<bool>();
  q.cluster_queue = StringField(Field(status, "admission"), "clusterQueue");
  const json* reserved = FindCondition(status, "QuotaReserved");
  const json* admitted = FindCondition(status, "Admitted");
  q.quota_reserved = IsTrue(reserved);
  q.admitted = IsTrue(admitted);
  if (!q.quota_reserved) {
    if (reserved != nullptr) q.message = StringField(*reserved, "message");
  } else if (!q.admitted && admitted != nullptr) {
    q.message = StringField(*admitted, "message");
  }
  const json* evicted = FindCondition(status, "Evicted");
  if (IsTrue(evicted)) q.evicted = StringField(*evicted, "reason");
  return f;
}

json TrimWorkload(json workload) {
  if (!workload.is_object()) return json::object();
  json out = json::object();
  const json& meta = Field(workload, "metadata");
  json m = json::object();
  for (const char* key :
       {"name", "namespace", "creationTimestamp", "deletionTimestamp", "ownerReferences"}) {
    auto it = meta.is_object() ? meta.find(key) : meta.end();
    if (meta.is_object() && it != meta.end()) m[key] = std::move(*it);
  }
  out["metadata"] = std::move(m);
  const json& spec = Field(workload, "spec");
  json sp = json::object();
  for (const char* key : {"queueName", "active"}) {
    if (spec.is_object() && spec.contains(key)) sp[key] = spec.at(key);
  }
  out["spec"] = std::move(sp);
  const json& status = Field(workload, "status");
  json st = json::object();
  if (status.is_object() && status.contains("conditions"))
    st["conditions"] = status.at("conditions");
  const std::string cq = StringField(Field(status, "admission"), "clusterQueue");
  if (!cq.empty()) st["admission"] = {{"clusterQueue", cq}};
  out["status"] = std::move(st);
  return out;
}

std::string QueueFacts::Take(const json& workload, bool deleted) {
  const json& meta = Field(workload, "metadata");
  const std::string key = Key(StringField(meta, "namespace"), StringField(meta, "name"));
  std::string job;
  auto it = workloads_.find(key);
  if (it != workloads_.end()) {
    job = Key(it->second.ns, it->second.owner_name);
    workloads_.erase(it);
  }
  if (deleted) return job;
  std::optional<WorkloadFacts> facts = ParseWorkload(workload);
  if (!facts) return job;
  job = Key(facts->ns, facts->owner_name);
  workloads_[key] = std::move(*facts);
  return job;
}

std::set<std::string> QueueFacts::ReplaceWorkloads(const std::string& ns,
                                                   const std::vector<json>& workloads) {
  std::set<std::string> jobs;
  for (auto it = workloads_.begin(); it != workloads_.end();) {
    if (ns.empty() || it->second.ns == ns) {
      jobs.insert(Key(it->second.ns, it->second.owner_name));
      it = workloads_.erase(it);
    } else {
      ++it;
    }
  }
  for (const json& w : workloads) {
    const std::string job = Take(w, false);
    if (!job.empty()) jobs.insert(job);
  }
  return jobs;
}

std::set<std::string> QueueFacts::OnWorkload(const json& workload, bool deleted) {
  const std::string job = Take(workload, deleted);
  if (job.empty()) return {};
  return {job};
}

std::set<std::string> QueueFacts::JobsInQueue(const std::string& ns,
                                              const std::string& queue) const {
  std::set<std::string> jobs;
  for (const auto& [key, w] : workloads_) {
    if (w.ns == ns && w.queue.local_queue == queue) jobs.insert(Key(w.ns, w.owner_name));
  }
  return jobs;
}

std::set<std::string> QueueFacts::ReplaceLocalQueues(const std::string& ns,
                                                     const std::vector<json>& queues) {
  std::set<std::string> jobs;
  std::map<std::string, std::string> before;
  for (auto it = local_queues_.begin(); it != local_queues_.end();) {
    if (ns.empty() || absl::StartsWith(it->first, ns + "/")) {
      before.insert(*it);
      it = local_queues_.erase(it);
    } else {
      ++it;
    }
  }
  for (const json& q : queues) {
    const json& meta = Field(q, "metadata");
    local_queues_[Key(StringField(meta, "namespace"), StringField(meta, "name"))] =
        StringField(Field(q, "spec"), "clusterQueue");
  }
  // The jobs of queues that changed, appeared or went.
  std::set<std::string> changed;
  for (const auto& [key, cq] : before) {
    auto it = local_queues_.find(key);
    if (it == local_queues_.end() || it->second != cq) changed.insert(key);
  }
  for (const auto& [key, cq] : local_queues_) {
    if (!before.count(key) && (ns.empty() || absl::StartsWith(key, ns + "/"))) changed.insert(key);
  }
  for (const std::string& key : changed) {
    const size_t slash = key.find('/');
    std::set<std::string> in = JobsInQueue(key.substr(0, slash), key.substr(slash + 1));
    jobs.insert(in.begin(), in.end());
  }
  return jobs;
}

std::set<std::string> QueueFacts::OnLocalQueue(const json& queue, bool deleted) {
  const json& meta = Field(queue, "metadata");
  const std::string ns = StringField(meta, "namespace");
  const std::string name = StringField(meta, "name");
  const std::string key = Key(ns, name);
  const std::string cq = StringField(Field(queue, "spec"), "clusterQueue");
  auto it = local_queues_.find(key);
  if (deleted) {
    if (it == local_queues_.end()) return {};
    local_queues_.erase(it);
  } else {
    if (it != local_queues_.end() && it->second == cq) return {};
    local_queues_[key] = cq;
  }
  return JobsInQueue(ns, name);
}

std::optional<model::ObservedState::Queue> QueueFacts::Explain(const std::string& ns,
                                                               const std::string& kind,
                                                               const std::string& name,
                                                               const std::string& uid) const {
  const WorkloadFacts* best = nullptr;
  for (const auto& [key, w] : workloads_) {
    if (w.ns != ns || w.owner_name != name || w.owner_kind != kind) continue;
    if (!uid.empty() && !w.owner_uid.empty() && w.owner_uid != uid) continue;
    // A live Workload before one being deleted; then the newest.
    if (best == nullptr || (best->deleting && !w.deleting) ||
        (best->deleting == w.deleting && w.created > best->created)) {
      best = &w;
    }
  }
  if (best == nullptr) return std::nullopt;
  model::ObservedState::Queue q = best->queue;
  if (q.cluster_queue.empty() && !q.local_queue.empty()) {
    auto it = local_queues_.find(Key(ns, q.local_queue));
    if (it != local_queues_.end()) q.cluster_queue = it->second;
  }
  return q;
}

}  // namespace coach::backend::kube
