#include "operator/backend/kube/node_health.h"

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

json TrimNode(const json& node) {
  json trimmed = {{"metadata", {{"name", StringField(Field(node, "metadata"), "name")}}}};
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

void NodeHealth::Remember(const std::string& node, bool not_ready) {
  not_ready_[node] = not_ready;
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
  if (!deleted_.insert(node).second) return;
  deleted_order_.push_back(node);
  while (deleted_order_.size() > kMaxDeletedNodes) {
    deleted_.erase(deleted_order_.front());
    deleted_order_.pop_front();
  }
}

std::set<std::string> NodeHealth::Replace(const std::vector<json>& nodes) {
  std::map<std::string, bool> listed;
  for (const json& node : nodes) {
    const std::string name = StringField(Field(node, "metadata"), "name");
    if (!name.empty()) listed[name] = NodeNotReady(node);
  }
  std::set<std::string> names;
  for (const auto& [name, not_ready] : not_ready_) names.insert(name);
  for (const auto& [name, not_ready] : listed) names.insert(name);
  std::map<std::string, bool> before;
  for (const std::string& name : names) before[name] = Lost(name);
  std::vector<std::string> gone;
  for (const auto& [name, not_ready] : not_ready_) {
    if (listed.count(name) == 0) gone.push_back(name);
  }
  for (const std::string& name : gone) Forget(name);
  for (const auto& [name, not_ready] : listed) Remember(name, not_ready);
  std::set<std::string> changed;
  for (const auto& [name, was] : before) {
    if (Lost(name) != was) changed.insert(name);
  }
  return changed;
}

std::set<std::string> NodeHealth::OnNode(const json& node, bool deleted) {
  const std::string name = StringField(Field(node, "metadata"), "name");
  if (name.empty()) return {};
  const bool was = Lost(name);
  if (deleted) {
    Forget(name);
  } else {
    Remember(name, NodeNotReady(node));
  }
  if (Lost(name) == was) return {};
  return {name};
}

}  // namespace coach::backend::kube
