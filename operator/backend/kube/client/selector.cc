#include "operator/backend/kube/client/selector.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coach::kubeclient {
namespace {

// Splits at commas outside parentheses.
absl::StatusOr<std::vector<std::string>> SplitTop(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth < 0)
      return absl::InvalidArgumentError(absl::StrCat("selector \"", text, "\": unbalanced ')'"));
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (depth != 0)
    return absl::InvalidArgumentError(absl::StrCat("selector \"", text, "\": unbalanced '('"));
  out.push_back(cur);
  return out;
}

bool ValidKey(absl::string_view k) {
  if (k.empty() || k.size() > 317) return false;
  for (char c : k) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == '/')) {
      return false;
    }
  }
  return true;
}

bool ValidValue(absl::string_view v) {
  if (v.size() > 63) return false;
  for (char c : v) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return false;
  }
  return true;
}

const nlohmann::json* Lookup(const nlohmann::json& obj, const std::string& path) {
  const nlohmann::json* cur = &obj;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(std::string(part));
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

}  // namespace

absl::StatusOr<Selector> Selector::ParseLabels(const std::string& text) {
  Selector s;
  if (absl::StripAsciiWhitespace(text).empty()) return s;
  auto parts = SplitTop(text);
  if (!parts.ok()) return parts.status();
  for (const std::string& raw : *parts) {
    std::string p(absl::StripAsciiWhitespace(raw));
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("labelSelector \"", text, "\": \"", p, "\": ", why));
    };
    if (p.empty()) return bad("empty requirement");
    Requirement r;
    size_t pos;
    if (p[0] == '!') {
      r.key = std::string(absl::StripAsciiWhitespace(absl::string_view(p).substr(1)));
      r.op = Op::kNotExists;
    } else if ((pos = p.find("!=")) != std::string::npos) {
      r.key = std::string(absl::StripAsciiWhitespace(p.substr(0, pos)));
      r.op = Op::kNotEq;
      r.values = {std::string(absl::StripAsciiWhitespace(p.substr(pos + 2)))};
    } else if ((pos = p.find("==")) != std::string::npos) {
      r.key = std::string(absl::StripAsciiWhitespace(p.substr(0, pos)));
      r.op = Op::kEq;
      r.values = {std::string(absl::StripAsciiWhitespace(p.substr(pos + 2)))};
    } else if ((pos = p.find('=')) != std::string::npos) {
      r.key = std::string(absl::StripAsciiWhitespace(p.substr(0, pos)));
      r.op = Op::kEq;
      r.values = {std::string(absl::StripAsciiWhitespace(p.substr(pos + 1)))};
    } else if (p.find('(') != std::string::npos) {
      size_t open = p.find('(');
      if (p.back() != ')') return bad("expected ')' at the end");
      std::vector<std::string> head =
          absl::StrSplit(p.substr(0, open), ' ', absl::SkipWhitespace());
      if (head.size() != 2 || (head[1] != "in" && head[1] != "notin"))
        return bad("expected `key in (...)` or `key notin (...)`");
      r.key = head[0];
      r.op = head[1] == "in" ? Op::kIn : Op::kNotIn;
      for (absl::string_view v : absl::StrSplit(p.substr(open + 1, p.size() - open - 2), ',')) {
        r.values.emplace_back(absl::StripAsciiWhitespace(v));
      }
      if (r.values.empty() || (r.values.size() == 1 && r.values[0].empty()))
        return bad("empty value set");
    } else {
      r.key = p;
      r.op = Op::kExists;
      if (r.key.find(' ') != std::string::npos) return bad("unexpected space");
    }
    if (!ValidKey(r.key)) return bad("invalid label key");
    for (const auto& v : r.values) {
      if (!ValidValue(v)) return bad(absl::StrCat("invalid label value \"", v, "\""));
    }
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

absl::StatusOr<Selector> Selector::ParseFields(const std::string& text) {
  Selector s;
  s.fields_ = true;
  if (absl::StripAsciiWhitespace(text).empty()) return s;
  for (absl::string_view raw : absl::StrSplit(text, ',')) {
    std::string p(absl::StripAsciiWhitespace(raw));
    Requirement r;
    size_t pos;
    if ((pos = p.find("!=")) != std::string::npos) {
      r.op = Op::kNotEq;
      r.key = p.substr(0, pos);
      r.values = {p.substr(pos + 2)};
    } else if ((pos = p.find("==")) != std::string::npos) {
      r.op = Op::kEq;
      r.key = p.substr(0, pos);
      r.values = {p.substr(pos + 2)};
    } else if ((pos = p.find('=')) != std::string::npos) {
      r.op = Op::kEq;
      r.key = p.substr(0, pos);
      r.values = {p.substr(pos + 1)};
    } else {
      return absl::InvalidArgumentError(absl::StrCat("fieldSelector \"", text, "\": \"", p,
                                                     "\": expected path=value or path!=value"));
    }
    if (r.key.empty())
      return absl::InvalidArgumentError(absl::StrCat("fieldSelector \"", text, "\": empty field"));
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

bool Selector::Matches(const nlohmann::json& object) const {
  for (const Requirement& r : requirements_) {
    const nlohmann::json* v = nullptr;
    if (fields_) {
      v = Lookup(object, r.key);
    } else {
      const nlohmann::json* labels = Lookup(object, "metadata.labels");
      if (labels != nullptr && labels->is_object()) {
        auto it = labels->find(r.key);
        if (it != labels->end()) v = &*it;
      }
    }
    std::string value;
    bool has = v != nullptr && !v->is_null();
    if (has) value = v->is_string() ? v->get<std::string>() : v->dump();
    bool in = has && std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    switch (r.op) {
      case Op::kEq:
        // A field that is absent reads as "" (the apiserver's field sets hold every field).
        if (fields_ ? value != r.values[0] : !in) return false;
        break;
      case Op::kIn:
        if (!in) return false;
        break;
      case Op::kNotEq:
        if (fields_ ? value == r.values[0] : in) return false;
        break;
      case Op::kNotIn:
        if (in) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kNotExists:
        if (has) return false;
        break;
    }
  }
  return true;
}

}  // namespace coach::kubeclient
