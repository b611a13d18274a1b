#include "operator/backend/kube/pod_observation.h"

#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "operator/backend/kube/object_fields.h"
#include "operator/backend/kube/scheduling_facts.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"

namespace coach::backend::kube {

using nlohmann::json;

namespace {

model::PodPhase ParsePhase(const std::string& phase) {
  if (phase == "Running") return model::PodPhase::kRunning;
  if (phase == "Succeeded") return model::PodPhase::kSucceeded;
  if (phase == "Failed") return model::PodPhase::kFailed;
  if (phase == "Unknown") return model::PodPhase::kUnknown;
  return model::PodPhase::kPending;
}

// The default container's status: the one named as the kind's default container, else the
// first.
const json* DefaultContainerStatus(const json& pod, const std::string& default_name) {
  const json& cs = Field(Field(pod, "status"), "containerStatuses");
  if (!cs.is_array() || cs.empty()) return nullptr;
  for (const json& c : cs) {
    if (StringField(c, "name") == default_name) return &c;
  }
  return &cs[0];
}

// status.reason values that the kubelet (NodeLost: the node controller of old releases) writes
// when it fails or ends a pod for its node's sake; the admission failures are matched in
// PodDisruption. Terminated is graceful node shutdown's since 1.22, Shutdown its name before.
constexpr std::pair<const char*, const char*> kPodReasons[] = {
    {"Evicted", "evicted"},        {"Preempting", "preempted"},
    {"NodeLost", "node lost"},     {"Terminated", "node shutdown"},
    {"Shutdown", "node shutdown"}, {"NodeShutdown", "node shutdown"},
};

// Reasons of the DisruptionTarget condition (k8s.io/api/core/v1 and the controllers that set
// it: scheduler, eviction API, taint eviction, pod GC, kubelet).
constexpr std::pair<const char*, const char*> kDisruptionReasons[] = {
    {"PreemptionByScheduler", "preempted"}, {"PreemptionByKubeScheduler", "preempted"},
    {"EvictionByEvictionAPI", "evicted"},   {"DeletionByTaintManager", "evicted"},
    {"DeletionByPodGC", "node lost"},       {"TerminationByKubelet", "terminated by the kubelet"},
};

// The pod's DisruptionTarget condition when its status is True.
const json* DisruptionTarget(const json& pod) {
  const json& conditions = Field(Field(pod, "status"), "conditions");
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions) {
    if (StringField(c, "type") == "DisruptionTarget" && StringField(c, "status") == "True") {
      return &c;
    }
  }
  return nullptr;
}

// `text` on one line and at most kMaxDisruptionLength bytes: a reason's message may hold a
// node's whole story, and the reconciler puts this into events and conditions.
std::string Bounded(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (text.size() <= kMaxDisruptionLength) return text;
  size_t cut = kMaxDisruptionLength - 3;
  // Not inside a UTF-8 sequence: back up over continuation bytes (10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "...";
}

bool HasContainer(const json& pod, const std::string& name) {
  const json& containers = Field(Field(pod, "spec"), "containers");
  if (!containers.is_array()) return false;
  for (const json& c : containers) {
    if (StringField(c, "name") == name) return true;
  }
  return false;
}

}  // namespace

json Trim(const json& o, bool pod) {
  const json& meta = Field(o, "metadata");
  json m = json::object();
  for (const char* key : {"name", "namespace", "uid", "labels", "creationTimestamp",
                          "deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"}) {
    const json& v = Field(meta, key);
    if (!v.is_null()) m[key] = v;
  }
  // Only the owners' uids: which job an object belongs to when two share a name.
  if (const json& refs = Field(meta, "ownerReferences"); refs.is_array() && !refs.empty()) {
    json uids = json::array();
    for (const json& ref : refs) uids.push_back({{"uid", StringField(ref, "uid")}});
    m["ownerReferences"] = std::move(uids);
  }
  json t = {{"metadata", std::move(m)}};
  if (!pod) return t;
  json names = json::array();
  const json& containers = Field(Field(o, "spec"), "containers");
  if (containers.is_array()) {
    for (const json& c : containers) names.push_back({{"name", StringField(c, "name")}});
  }
  t["spec"] = {{"containers", std::move(names)}};
  // What says where and why a pod waits (scheduling_facts.h): its node, its NodePool
  // selector and its PodScheduled condition.
  const std::string node = StringField(Field(o, "spec"), "nodeName");
  if (!node.empty()) t["spec"]["nodeName"] = node;
  const std::string pool = PodNodePool(o);
  if (!pool.empty()) t["spec"]["nodeSelector"] = {{"karpenter.sh/nodepool", pool}};
  json status = json::object();
  const json& s = Field(o, "status");
  const json& conditions = Field(s, "conditions");
  if (conditions.is_array()) {
    json out = json::array();
    for (const json& c : conditions) {
      const std::string type = StringField(c, "type");
      if (type != "PodScheduled" && type != "DisruptionTarget") continue;
      json kept = json::object();
      for (const char* key : {"type", "status", "reason", "message", "lastTransitionTime"}) {
        if (!Field(c, key).is_null()) kept[key] = Field(c, key);
      }
      out.push_back(std::move(kept));
    }
    if (!out.empty()) status["conditions"] = std::move(out);
  }
  for (const char* key : {"phase", "message", "reason"}) {
    if (!Field(s, key).is_null()) status[key] = Field(s, key);
  }
  const json& cs = Field(s, "containerStatuses");
  if (cs.is_array()) {
    json out = json::array();
    for (const json& c : cs) {
      json e = json::object();
      for (const char* key : {"name", "state", "lastState", "restartCount"}) {
        if (!Field(c, key).is_null()) e[key] = Field(c, key);
      }
      out.push_back(std::move(e));
    }
    status["containerStatuses"] = std::move(out);
  }
  t["status"] = std::move(status);
  return t;
}

std::string DefaultContainerName(const model::Job& job) {
  absl::StatusOr<const api::v1::KindInfo*> kind = reconcile::KindOf(job);
  return kind.ok() ? std::string((*kind)->default_container) : "";
}

model::ObservedPod ToObservedPod(const model::Job& job, const json& pod,
                                 const std::string& default_container) {
  model::ObservedPod p;
  const json& meta = Field(pod, "metadata");
  p.name = StringField(meta, "name");
  p.uid = StringField(meta, "uid");
  const model::PodIdentity id = model::IdentifyPod(job, pod);
  p.replica_type = id.replica_type;
  p.index = id.index;
  p.attempt = id.attempt;
  // A container named after the replica type is its main one (a TrainJob initializer's is named
  // after its replicated job); else the kind's default container.
  const std::string container =
      HasContainer(pod, p.replica_type) ? p.replica_type : default_container;
  const json& status = Field(pod, "status");
  p.phase = ParsePhase(StringField(status, "phase"));
  p.deleting = Deleting(pod);
  p.created = ParseTime(StringField(meta, "creationTimestamp"));
  p.node = StringField(Field(pod, "spec"), "nodeName");
  const json& cs = Field(status, "containerStatuses");
  if (cs.is_array()) {
    for (const json& c : cs) {
      const json& rc = Field(c, "restartCount");
      if (rc.is_number_integer()) p.restart_count += rc.get<int>();
    }
  }
  std::string reason;
  if (const json* c = DefaultContainerStatus(pod, container)) {
    const json& terminated = Field(Field(*c, "state"), "terminated");
    const json& last = Field(Field(*c, "lastState"), "terminated");
    const json& t = terminated.is_object() ? terminated : last;
    if (t.is_object() && Field(t, "exitCode").is_number_integer()) {
      p.exit_code = Field(t, "exitCode").get<int>();
      const std::string r = StringField(t, "reason");
      if (!r.empty() && r != "Completed") reason = r;
    }
    const json& waiting = Field(Field(*c, "state"), "waiting");
    if (reason.empty() && waiting.is_object()) {
      const std::string r = StringField(waiting, "reason");
      if (!r.empty() && r != "ContainerCreating") {
        reason = r;
        const std::string m = StringField(waiting, "message");
        if (!m.empty()) absl::StrAppend(&reason, ": ", m);
      }
    }
  }
  p.message = StringField(status, "message");
  if (p.message.empty()) p.message = reason;
  p.disruption = PodDisruption(pod);
  p.deletion_requested = DeletionRequested(pod);
  SetPodNotice(pod, &p);
  return p;
}

void SetPodNotice(const json& pod, model::ObservedPod* observed) {
  if (observed->phase != model::PodPhase::kRunning) return;
  const json& meta = Field(pod, "metadata");
  const absl::Time ends = ParseTime(StringField(meta, "deletionTimestamp"));
  if (ends != absl::InfinitePast()) {
    const json& grace = Field(meta, "deletionGracePeriodSeconds");
    const int64_t seconds = grace.is_number_integer() ? grace.get<int64_t>() : 0;
    observed->notice = absl::StrCat("deleted: ", seconds, "s of grace");
    observed->notice_deadline = ends;
  } else if (DisruptionTarget(pod) != nullptr) {
    observed->notice = PodDisruption(pod);
  }
}

std::string PodDisruption(const json& pod) {
  const json& status = Field(pod, "status");
  std::string what;
  std::string message;
  const std::string reason = StringField(status, "reason");
  for (const auto& [r, words] : kPodReasons) {
    if (reason == r) what = words;
  }
  if (what.empty() && (absl::StartsWith(reason, "OutOf") || reason == "UnexpectedAdmissionError" ||
                       reason == "NodeAffinity" || reason == "TopologyAffinityError")) {
    what = absl::StrCat("not admitted (", reason, ")");
  }
  if (!what.empty()) {
    message = StringField(status, "message");
  } else if (const json* c = DisruptionTarget(pod)) {
    const std::string r = StringField(*c, "reason");
    for (const auto& [known, words] : kDisruptionReasons) {
      if (r == known) what = words;
    }
    if (what.empty()) what = r.empty() ? "disrupted" : absl::StrCat("disrupted (", r, ")");
    message = StringField(*c, "message");
  }
  if (what.empty()) return "";
  return Bounded(message.empty() ? what : absl::StrCat(what, ": ", message));
}

absl::Time DeletionRequested(const json& pod) {
  const json& meta = Field(pod, "metadata");
  const absl::Time at = ParseTime(StringField(meta, "deletionTimestamp"));
  if (at == absl::InfinitePast()) return at;
  const json& grace = Field(meta, "deletionGracePeriodSeconds");
  if (!grace.is_number_integer() || grace.get<int64_t>() <= 0) return at;
  return at - absl::Seconds(grace.get<int64_t>());
}

}  // namespace coach::backend::kube
