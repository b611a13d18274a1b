#include "operator/backend/kube/node_health.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/backend/kube/object_fields.h"

namespace coach::backend::kube {

using nlohmann::json;

bool NodeNotReady(const json& node) {
  const json& conditions = Field(Field(node, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (StringField(c, "type") == "Ready") return StringField(c, "status") != "True";
  }
  return false;
}

namespace {

// The taints NodeDisruptionNotice reads, and its words for each.
constexpr std::pair<const char*, const char*> kNoticeTaints[] = {
    {"karpenter.sh/disrupted", "Karpenter is disrupting node "},
    {"ToBeDeletedByClusterAutoscaler", "the cluster autoscaler is removing node "},
};

}  // namespace

std::string NodeDisruptionNotice(const json& node) {
  const json& taints = Field(Field(node, "spec"), "taints");
  if (!taints.is_array()) return "";
  for (const auto& [key, words] : kNoticeTaints) {
    for (const json& taint : taints) {
      if (StringField(taint, "key") == key) {
        return absl::StrCat(words, StringField(Field(node, "metadata"), "name"));
      }
    }
  }
  return "";
}

json TrimNode(const json& node) {
  json trimmed = {{"metadata", {{"name", StringField(Field(node, "metadata"), "name")}}}};
  const json& taints = Field(Field(node, "spec"), "taints");
  if (taints.is_array()) {
    json kept = json::array();
    for (const json& taint : taints) {
      for (const auto& [key, words] : kNoticeTaints) {
        if (StringField(taint, "key") == key) kept.push_back({{"key", key}});
      }
    }
    if (!kept.empty()) trimmed["spec"]["taints"] = std::move(kept);
  }
  const json& conditions = Field(Field(node, "status"), "conditions");
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (StringField(c, "type") != "Ready") continue;
      trimmed["status"]["conditions"] =
          json::array({{{"type", "Ready"}, {"status", StringField(c, "status")}}});
      break;
    }
  }
  return trimmed;
}

bool NodeHealth::Lost(const std::string& node) const {
  if (node.empty()) return false;
  auto it = not_ready_.find(node);
  if (it != not_ready_.end()) return it->second;
  return deleted_.count(node) > 0;
}

std::string NodeHealth::Notice(const std::string& node) const {
  auto it = notices_.find(node);
  return it == notices_.end() ? "" : it->second;
}

void NodeHealth::Remember(const std::string& node, bool not_ready, std::string notice) {
  not_ready_[node] = not_ready;
  if (notice.empty()) {
    notices_.erase(node);
  } else {
    notices_[node] = std::move(notice);
  }
  // A node of the same name again (a static cluster re-registers its machines by name).
  if (deleted_.erase(node) > 0) {
    for (auto it = deleted_order_.begin(); it != deleted_order_.end(); ++it) {
      if (*it == node) {
        deleted_order_.erase(it);
        break;
      }
    }
  }
}

void NodeHealth::Forget(const std::string& node) {
  not_ready_.erase(node);
  notices_.erase(node);
  if (!deleted_.insert(node).second) return;
  deleted_order_.push_back(node);
  while (deleted_order_.size() > kMaxDeletedNodes) {
    deleted_.erase(deleted_order_.front());
    deleted_order_.pop_front();
  }
}

std::set<std::string> NodeHealth::Replace(const std::vector<json>& nodes) {
  std::map<std::string, std::pair<bool, std::string>> listed;
  for (const json& node : nodes) {
    const std::string name = StringField(Field(node, "metadata"), "name");
    if (!name.empty()) listed[name] = {NodeNotReady(node), NodeDisruptionNotice(node)};
  }
  std::set<std::string> names;
  for (const auto& [name, not_ready] : not_ready_) names.insert(name);
  for (const auto& [name, facts] : listed) names.insert(name);
  std::map<std::string, std::pair<bool, std::string>> before;
  for (const std::string& name : names) before[name] = {Lost(name), Notice(name)};
  std::vector<std::string> gone;
  for (const auto& [name, not_ready] : not_ready_) {
    if (listed.count(name) == 0) gone.push_back(name);
  }
  for (const std::string& name : gone) Forget(name);
  for (auto& [name, facts] : listed) Remember(name, facts.first, std::move(facts.second));
  std::set<std::string> changed;
  for (const auto& [name, was] : before) {
    if (std::make_pair(Lost(name), Notice(name)) != was) changed.insert(name);
  }
  return changed;
}

std::set<std::string> NodeHealth::OnNode(const json& node, bool deleted) {
  const std::string name = StringField(Field(node, "metadata"), "name");
  if (name.empty()) return {};
  const std::pair<bool, std::string> was = {Lost(name), Notice(name)};
  if (deleted) {
    Forget(name);
  } else {
    Remember(name, NodeNotReady(node), NodeDisruptionNotice(node));
  }
  if (std::make_pair(Lost(name), Notice(name)) == was) return {};
  return {name};
}

}  // namespace coach::backend::kube
