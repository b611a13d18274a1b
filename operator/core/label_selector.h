#pragma once

// Kubernetes equality-based label selectors: "a=b,c==d,e!=f,g,!h".
//   a=b / a==b   the label a exists with value b
//   a!=b         the label a is absent or has another value
//   g            the label g exists (any value)
//   !h           the label h is absent
// Whitespace around terms, keys and values is ignored. Set-based terms ("in", "notin")
// are not supported and are rejected with a clear message.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace coach::core {

struct LabelRequirement {
  enum class Op { kEquals, kNotEquals, kExists, kNotExists };
  std::string key;
  Op op = Op::kEquals;
  std::string value;
};

class LabelSelector {
 public:
  // Errors: InvalidArgument naming the bad term and why (empty key, bad key or value
  // syntax, set-based syntax).
  static absl::StatusOr<LabelSelector> Parse(const std::string& text);

  // True when every requirement holds (an empty selector matches everything).
  bool Matches(const std::map<std::string, std::string>& labels) const;
  template <typename MapT>
  bool MatchesMap(const MapT& labels) const {
    return Matches(std::map<std::string, std::string>(labels.begin(), labels.end()));
  }

  // The `key=value` requirements (what a store can filter on by itself).
  std::map<std::string, std::string> Equalities() const;
  // True when there is something beyond equalities.
  bool HasNonEqualities() const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

 private:
  std::vector<LabelRequirement> requirements_;
};

}  // namespace coach::core
