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

}  // namespace coach::model
