#pragma once

// Kubernetes' `$(VAR)` expansion (k8s.io/kubernetes third_party/forked/golang/expansion),
// used for container env values, command and args. It is variable substitution, never a
// shell: `$(NAME)` becomes the value of NAME when `lookup` knows it and stays verbatim
// otherwise; `$$` becomes `$` (so `$$(NAME)` yields the literal `$(NAME)`); any other `$`
// is kept as is.

#include <functional>
#include <optional>
#include <string>

namespace coach::backend::local {

using VarLookup = std::function<std::optional<std::string>(const std::string& name)>;

std::string ExpandKubeVars(const std::string& input, const VarLookup& lookup);

}  // namespace coach::backend::local
