#pragma once

// A Kubernetes object as coach creates it: the exact JSON body that would be sent to
// the API server, plus the coordinates every backend needs without parsing the body.

#include <nlohmann/json.hpp>
#include <string>

namespace coach::model {

using Json = nlohmann::json;

struct KubeObject {
  std::string api_version;  // "v1", "scheduling.volcano.sh/v1beta1", ...
  std::string kind;         // "Pod", "Service", "ConfigMap", "PodGroup", ...
  std::string name;
  std::string namespace_;
  // The complete object, apiVersion/kind/metadata included, ready to POST.
  Json body;
};

// The label `key` of a Kubernetes object (its metadata.labels), "" when absent or not a string.
inline std::string LabelOf(const Json& object, const std::string& key) {
  if (!object.is_object()) return "";
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return "";
  auto it = labels->find(key);
  return it != labels->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace coach::model
