#include "operator/core/label_selector.h"

#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coach::core {
namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A name segment: up to 63 chars of [A-Za-z0-9_.-], beginning and ending alphanumeric.
bool ValidNameSegment(const std::string& s, size_t max_len) {
  if (s.empty() || s.size() > max_len) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Qualified name: [prefix/]name, prefix a DNS subdomain (checked loosely: 253 chars of
// lowercase alphanumerics, '-' and '.').
std::string KeyProblem(const std::string& key) {
  if (key.empty()) return "the key is empty";
  std::string name = key;
  const size_t slash = key.find('/');
  if (slash != std::string::npos) {
    const std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return "the key's prefix must be 1-253 characters";
    for (char c : prefix) {
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
        return "the key's prefix must be a DNS subdomain";
      }
    }
  }
  if (!ValidNameSegment(name, 63)) {
    return "the key must be 1-63 characters of [A-Za-z0-9_.-], beginning and ending "
           "with an alphanumeric character";
  }
  return "";
}

std::string ValueProblem(const std::string& value) {
  if (value.empty()) return "";
  if (!ValidNameSegment(value, 63)) {
    return "the value must be at most 63 characters of [A-Za-z0-9_.-], beginning and "
           "ending with an alphanumeric character";
  }
  return "";
}

std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

}  // namespace

absl::StatusOr<LabelSelector> LabelSelector::Parse(const std::string& text) {
  LabelSelector selector;
  if (Trim(text).empty()) return selector;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    const std::string term = Trim(raw);
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("label_selector: term \"", term, "\": ", why));
    };
    if (term.empty()) return bad("empty term (stray comma?)");
    if (term.find('(') != std::string::npos || term.find(" in ") != std::string::npos ||
        term.find(" notin ") != std::string::npos) {
      return bad("set-based selectors (in, notin) are not supported; use a=b, a!=b, a or !a");
    }
    LabelRequirement req;
    size_t pos;
    if ((pos = term.find("!=")) != std::string::npos) {
      req.op = LabelRequirement::Op::kNotEquals;
      req.key = Trim(term.substr(0, pos));
      req.value = Trim(term.substr(pos + 2));
    } else if ((pos = term.find("==")) != std::string::npos) {
      req.key = Trim(term.substr(0, pos));
      req.value = Trim(term.substr(pos + 2));
    } else if ((pos = term.find('=')) != std::string::npos) {
      req.key = Trim(term.substr(0, pos));
      req.value = Trim(term.substr(pos + 1));
    } else if (term[0] == '!') {
      req.op = LabelRequirement::Op::kNotExists;
      req.key = Trim(term.substr(1));
    } else {
      req.op = LabelRequirement::Op::kExists;
      req.key = term;
    }
    if (std::string why = KeyProblem(req.key); !why.empty()) return bad(why);
    if (req.value.find_first_of("=!") != std::string::npos) {
      return bad("the value contains '=' or '!'");
    }
    if (std::string why = ValueProblem(req.value); !why.empty()) return bad(why);
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const LabelRequirement& req : requirements_) {
    auto it = labels.find(req.key);
    switch (req.op) {
      case LabelRequirement::Op::kEquals:
        if (it == labels.end() || it->second != req.value) return false;
        break;
      case LabelRequirement::Op::kNotEquals:
        if (it != labels.end() && it->second == req.value) return false;
        break;
      case LabelRequirement::Op::kExists:
        if (it == labels.end()) return false;
        break;
      case LabelRequirement::Op::kNotExists:
        if (it != labels.end()) return false;
        break;
    }
  }
  return true;
}

std::map<std::string, std::string> LabelSelector::Equalities() const {
  std::map<std::string, std::string> out;
  for (const LabelRequirement& req : requirements_) {
    if (req.op == LabelRequirement::Op::kEquals) out[req.key] = req.value;
  }
  return out;
}

bool LabelSelector::HasNonEqualities() const {
  for (const LabelRequirement& req : requirements_) {
    if (req.op != LabelRequirement::Op::kEquals) return true;
  }
  return false;
}

}  // namespace coach::core
