#include "operator/backend/kube/scheduling_facts.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "operator/backend/kube/object_fields.h"
#include "operator/model/kube_object.h"

namespace coach::backend::kube {

using nlohmann::json;

namespace {

constexpr char kNodePoolLabel[] = "karpenter.sh/nodepool";
constexpr size_t kMaxReason = 400;

// The condition of `type` in status.conditions, or null.
const json* Condition(const json& object, const std::string& type) {
  const json& conditions = Field(Field(object, "status"), "conditions");
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions) {
    if (StringField(c, "type") == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const json* condition) {
  return condition != nullptr && StringField(*condition, "status") == "True";
}

// When the event last happened: series.lastObservedTime, lastTimestamp, eventTime, then
// metadata.creationTimestamp (Karpenter's recorder fills lastTimestamp; others differ).
absl::Time EventTime(const json& event) {
  for (const std::string& s : {StringField(Field(event, "series"), "lastObservedTime"),
                               StringField(event, "lastTimestamp"), StringField(event, "eventTime"),
                               StringField(Field(event, "metadata"), "creationTimestamp")}) {
    if (!s.empty()) {
      const absl::Time t = ParseTime(s);
      if (t != absl::InfinitePast()) return t;
    }
  }
  return absl::InfinitePast();
}

}  // namespace

std::string NominatedNodeClaim(const std::string& message) {
  const std::string prefix = "nodeclaim/";
  const size_t at = message.find(prefix);
  if (at == std::string::npos) return "";
  const size_t start = at + prefix.size();
  size_t end = start;
  while (end < message.size() && message[end] != ',' && message[end] != ' ' &&
         message[end] != ';') {
    ++end;
  }
  return message.substr(start, end - start);
}

std::string ShortKarpenterReason(const std::string& message) {
  absl::string_view rest = message;
  absl::ConsumePrefix(&rest, "Failed to schedule pod, ");
  std::vector<std::string> kept;
  std::vector<std::string> pool_clauses;
  for (absl::string_view clause : absl::StrSplit(rest, "; ", absl::SkipWhitespace())) {
    std::string c(clause);
    // "requirements=a In [..], b In [..], resources={...}": the requirements are the pod's
    // own plus the NodePool's, long and already known; the resources say what did not fit.
    const size_t req = c.find("requirements=");
    if (req != std::string::npos) {
      const size_t res = c.find("resources=", req);
      if (res != std::string::npos) {
        c.erase(req, res - req);
      } else {
        c.erase(req);
      }
      while (!c.empty() && (c.back() == ' ' || c.back() == ',')) c.pop_back();
    }
    if (absl::StrContains(c, absl::StrCat("key ", kNodePoolLabel))) {
      pool_clauses.push_back(std::move(c));
    } else {
      kept.push_back(std::move(c));
    }
  }
  // The pools the pod's selector rules out say nothing when another clause says why its own
  // pool does not fit.
  if (kept.empty()) kept = std::move(pool_clauses);
  std::string out = absl::StrJoin(kept, "; ");
  if (out.size() > kMaxReason) out = absl::StrCat(out.substr(0, kMaxReason - 3), "...");
  return out;
}

std::string NodeClaimProgress(const json& nodeclaim) {
  const json* launched = Condition(nodeclaim, "Launched");
  if (launched != nullptr && StringField(*launched, "status") == "False") {
    std::string why = StringField(*launched, "message");
    if (why.empty()) why = StringField(*launched, "reason");
    return why.empty() ? "launch failed" : absl::StrCat("launch failed: ", why);
  }
  if (!IsTrue(launched)) return "launching";
  if (!IsTrue(Condition(nodeclaim, "Registered"))) return "launched, node registering";
  if (!IsTrue(Condition(nodeclaim, "Initialized"))) return "node initializing";
  return "node ready";
}

std::string PodNodePool(const json& pod) {
  return StringField(Field(Field(pod, "spec"), "nodeSelector"), kNodePoolLabel);
}

std::optional<absl::Time> ScheduledAt(const json& pod) {
  const json* c = Condition(pod, "PodScheduled");
  if (!IsTrue(c)) return std::nullopt;
  const absl::Time t = ParseTime(StringField(*c, "lastTransitionTime"));
  if (t == absl::InfinitePast()) return std::nullopt;
  return t;
}

std::string SchedulingFacts::Take(const json& event, bool deleted) {
  const json& involved = Field(event, "involvedObject");
  const std::string uid = StringField(involved, "uid");
  if (uid.empty() || StringField(involved, "kind") != "Pod") return "";
  const std::string reason = StringField(event, "reason");
  if (reason != "Nominated" && reason != "FailedScheduling") return "";
  const std::string key =
      absl::StrCat(StringField(involved, "namespace"), "/", StringField(involved, "name"));
  auto it = pods_.find(uid);
  if (deleted) {
    // Only the event that is the pod's latest fact takes the fact with it.
    if (it == pods_.end() || it->second.reason != reason ||
        it->second.message != StringField(event, "message")) {
      return "";
    }
    pods_.erase(it);
    return key;
  }
  PodEvent e{key, reason, StringField(event, "message"), EventTime(event)};
  if (it != pods_.end()) {
    // An older occurrence (a re-list, events out of order) does not replace a newer one.
    if (e.time < it->second.time) return "";
    if (it->second.reason == e.reason && it->second.message == e.message) {
      it->second.time = e.time;
      return "";
    }
  }
  pods_[uid] = std::move(e);
  return key;
}

std::set<std::string> SchedulingFacts::ReplaceEvents(const std::string& ns,
                                                     const std::vector<json>& events) {
  std::set<std::string> changed;
  for (auto it = pods_.begin(); it != pods_.end();) {
    if (ns.empty() || absl::StartsWith(it->second.pod_key, absl::StrCat(ns, "/"))) {
      changed.insert(it->second.pod_key);
      it = pods_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<const json*> sorted;
  for (const json& e : events) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const json* a, const json* b) { return EventTime(*a) < EventTime(*b); });
  for (const json* e : sorted) {
    const std::string key = Take(*e, false);
    if (!key.empty()) changed.insert(key);
  }
  return changed;
}

std::set<std::string> SchedulingFacts::OnEvent(const json& event, bool deleted) {
  const std::string key = Take(event, deleted);
  if (key.empty()) return {};
  return {key};
}

std::set<std::string> SchedulingFacts::PodsNominatedTo(const std::string& nodeclaim) const {
  std::set<std::string> pods;
  for (const auto& [uid, e] : pods_) {
    if (e.reason == "Nominated" && NominatedNodeClaim(e.message) == nodeclaim) {
      pods.insert(e.pod_key);
    }
  }
  return pods;
}

std::set<std::string> SchedulingFacts::ReplaceNodeClaims(const std::vector<json>& nodeclaims) {
  std::set<std::string> changed;
  std::map<std::string, NodeClaim> next;
  for (const json& nc : nodeclaims) {
    next[StringField(Field(nc, "metadata"), "name")] = {model::LabelOf(nc, kNodePoolLabel),
                                                        NodeClaimProgress(nc)};
  }
  for (const auto& [name, facts] : nodeclaims_) {
    auto it = next.find(name);
    if (it == next.end() || it->second.progress != facts.progress) {
      changed.merge(PodsNominatedTo(name));
    }
  }
  for (const auto& [name, facts] : next) {
    if (nodeclaims_.find(name) == nodeclaims_.end()) changed.merge(PodsNominatedTo(name));
  }
  nodeclaims_ = std::move(next);
  return changed;
}

std::set<std::string> SchedulingFacts::OnNodeClaim(const json& nodeclaim, bool deleted) {
  const std::string name = StringField(Field(nodeclaim, "metadata"), "name");
  if (name.empty()) return {};
  if (deleted) {
    if (nodeclaims_.erase(name) == 0) return {};
    return PodsNominatedTo(name);
  }
  NodeClaim facts{model::LabelOf(nodeclaim, kNodePoolLabel), NodeClaimProgress(nodeclaim)};
  auto it = nodeclaims_.find(name);
  if (it != nodeclaims_.end() && it->second.progress == facts.progress &&
      it->second.nodepool == facts.nodepool) {
    return {};
  }
  nodeclaims_[name] = std::move(facts);
  return PodsNominatedTo(name);
}

model::ObservedPod::Waiting SchedulingFacts::Explain(const json& pod) const {
  model::ObservedPod::Waiting w;
  const json& spec = Field(pod, "spec");
  const std::string phase = StringField(Field(pod, "status"), "phase");
  if (!StringField(spec, "nodeName").empty() || (!phase.empty() && phase != "Pending")) return w;
  if (Deleting(pod)) return w;
  const std::string pool = PodNodePool(pod);
  auto it = pods_.find(StringField(Field(pod, "metadata"), "uid"));
  if (it != pods_.end() && it->second.reason == "Nominated") {
    w.state = "provisioning";
    w.source = "karpenter";
    w.nodeclaim = NominatedNodeClaim(it->second.message);
    w.nodepool = pool;
    auto nc = nodeclaims_.find(w.nodeclaim);
    if (nc != nodeclaims_.end()) {
      if (!nc->second.nodepool.empty()) w.nodepool = nc->second.nodepool;
      w.message = nc->second.progress;
    } else if (w.nodeclaim.empty()) {
      // Nominated to an existing node: the scheduler binds it next.
      w.message = absl::StrCat("nominated: ", it->second.message);
    } else {
      w.message = "launching";
    }
    return w;
  }
  if (it != pods_.end() && it->second.reason == "FailedScheduling") {
    w.state = "unschedulable";
    w.source = "karpenter";
    w.nodepool = pool;
    w.message = ShortKarpenterReason(it->second.message);
    return w;
  }
  const json* scheduled = Condition(pod, "PodScheduled");
  if (scheduled != nullptr && StringField(*scheduled, "status") == "False" &&
      StringField(*scheduled, "reason") == "Unschedulable") {
    w.state = "unschedulable";
    w.source = "scheduler";
    w.nodepool = pool;
    w.message = StringField(*scheduled, "message");
    if (w.message.size() > kMaxReason) {
      w.message = absl::StrCat(w.message.substr(0, kMaxReason - 3), "...");
    }
  }
  return w;
}

}  // namespace coach::backend::kube
