#pragma once

// Kubernetes' `$(VAR)` expansion (k8s.io/kubernetes third_party/forked/golang/expansion),
// used for container env values, command and args. It is variable substitution, never a
// shell: `$(NAME)` becomes the value of NAME when `lookup` knows it and stays verbatim
// otherwise; `$$` becomes `$` (so `$$(NAME)` yields the literal `$(NAME)`); any other `$`
// is kept as is.
//
// Bounded: a value can name earlier ones, each naming earlier ones, so a few hundred bytes of
// manifest can ask for gigabytes; the expansion stops as soon as it passes `max_size`.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace coach::backend::local {

using VarLookup = std::function<std::optional<std::string>(const std::string& name)>;

// nullopt when the result would be longer than `max_size` bytes.
std::optional<std::string> ExpandKubeVars(const std::string& input, const VarLookup& lookup,
                                          size_t max_size);

}  // namespace coach::backend::local
