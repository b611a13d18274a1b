#pragma once

// Label and field selectors as the apiserver parses them, for in-memory matching (the fake
// client, watch caches).
//
// Label selector grammar: requirements separated by commas; each is `k=v`, `k==v`, `k!=v`,
// `k in (a,b)`, `k notin (a,b)`, `k` (exists) or `!k` (does not exist). `k!=v` and `notin`
// also match objects without the label. Field selector: `path=v`, `path==v`, `path!=v`
// separated by commas, where path is a dotted JSON path (metadata.name, status.phase).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::kubeclient {

class Selector {
 public:
  // InvalidArgument naming the bad requirement.
  static absl::StatusOr<Selector> ParseLabels(const std::string& text);
  static absl::StatusOr<Selector> ParseFields(const std::string& text);

  // Labels: object.metadata.labels; fields: the dotted paths into object.
  bool Matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEq, kNotEq, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  bool fields_ = false;
  std::vector<Requirement> requirements_;
};

}  // namespace coach::kubeclient
