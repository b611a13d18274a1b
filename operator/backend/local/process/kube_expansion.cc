#include "operator/backend/local/process/kube_expansion.h"

namespace coach::backend::local {

// A line-by-line port of upstream's Expand/tryReadVariableName so that corner cases
// ("$(" without ")", a trailing "$") come out exactly as on a kubelet.
std::optional<std::string> ExpandKubeVars(const std::string& input, const VarLookup& lookup,
                                          size_t max_size) {
  std::string out;
  size_t checkpoint = 0;
  for (size_t cursor = 0; cursor < input.size(); ++cursor) {
    if (out.size() > max_size) return std::nullopt;
    if (input[cursor] != '$' || cursor + 1 >= input.size()) continue;
    out.append(input, checkpoint, cursor - checkpoint);
    const size_t start = cursor + 1;
    size_t advance = 1;
    if (input[start] == '$') {
      out.push_back('$');
    } else if (input[start] == '(') {
      const size_t close = input.find(')', start + 1);
      if (close == std::string::npos) {
        out.append("$(");
      } else {
        const std::string name = input.substr(start + 1, close - start - 1);
        std::optional<std::string> value = lookup(name);
        if (value.has_value()) {
          if (out.size() + value->size() > max_size) return std::nullopt;
          out.append(*value);
        } else {
          out.append("$(").append(name).append(")");
        }
        advance = close - start + 1;
      }
    } else {
      out.push_back('$');
      out.push_back(input[start]);
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  if (checkpoint < input.size()) out.append(input, checkpoint, std::string::npos);
  if (out.size() > max_size) return std::nullopt;
  return out;
}

}  // namespace coach::backend::local
