#include "operator/trainer/domain_prefixed_path.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace coach::trainer {
namespace {

constexpr char kSubdomainMessage[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
constexpr char kPathMessage[] =
    "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')";
constexpr size_t kSubdomainMaxLength = 253;

bool IsAlnumLower(char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsLabel(absl::string_view s) {
  if (s.empty() || !IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  for (char c : s) {
    if (!IsAlnumLower(c) && c != '-') return false;
  }
  return true;
}

bool IsSubdomain(absl::string_view s) {
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (!IsLabel(label)) return false;
  }
  return true;
}

bool IsHttpPath(absl::string_view s) {
  static constexpr absl::string_view kPunct = "/-._~%!$&'()*+,;=:";
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(c) && kPunct.find(c) == absl::string_view::npos) return false;
  }
  return true;
}

}  // namespace

std::vector<FieldError> DomainPrefixedPathErrors(const std::string& path,
                                                 const std::string& value) {
  if (value.empty()) return {Required(path, "")};
  const size_t slash = value.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == value.size()) {
    return {Invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")")};
  }
  const std::string host = value.substr(0, slash);
  const std::string rest = value.substr(slash + 1);
  std::vector<FieldError> errors;
  if (host.size() > kSubdomainMaxLength) {
    errors.push_back(Invalid(path, host, "must be no more than 253 characters"));
  }
  if (!IsSubdomain(host)) errors.push_back(Invalid(path, host, kSubdomainMessage));
  if (!IsHttpPath(rest)) errors.push_back(Invalid(path, rest, kPathMessage));
  return errors;
}

}  // namespace coach::trainer
