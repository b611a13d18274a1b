#include "operator/trainer/field_error.h"

#include <cstdio>
#include <set>

#include "absl/strings/str_cat.h"

namespace coach::trainer {

using nlohmann::ordered_json;

namespace {

// Go's encoding/json escapes these so its output is safe inside HTML; nlohmann does not.
std::string GoJson(const ordered_json& value) {
  const std::string raw = value.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < raw.size() && raw[i + 1] == '\x80' &&
               (raw[i + 2] == '\xa8' || raw[i + 2] == '\xa9')) {
      out += raw[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there starts none.
size_t Utf8Length(const std::string& s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x80) {
      const size_t n = Utf8Length(s, i);
      if (n == 0) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", b);
        out += hex;
        ++i;
      } else {
        out.append(s, i, n);
        i += n;
      }
      continue;
    }
    switch (b) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (b < 0x20 || b == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", b);
          out += hex;
        } else {
          out += static_cast<char>(b);
        }
    }
    ++i;
  }
  return out + "\"";
}

std::string FieldError::ToString() const {
  return path.empty() ? body : absl::StrCat(path, ": ", body);
}

FieldError Invalid(const std::string& path, const ordered_json& value, const std::string& detail) {
  std::string shown;
  if (value.is_string()) {
    shown = GoQuote(value.get<std::string>());
  } else if (value.is_number() || value.is_boolean()) {
    shown = value.dump();
  } else {
    shown = GoJson(value);
  }
  std::string body = absl::StrCat("Invalid value: ", shown);
  if (!detail.empty()) absl::StrAppend(&body, ": ", detail);
  return {path, std::move(body)};
}

FieldError Forbidden(const std::string& path, const std::string& detail) {
  return {path, detail.empty() ? "Forbidden" : absl::StrCat("Forbidden: ", detail)};
}

FieldError Required(const std::string& path, const std::string& detail) {
  return {path, detail.empty() ? "Required value" : absl::StrCat("Required value: ", detail)};
}

FieldError Plain(const std::string& message) { return {"", message}; }

std::string Aggregate(const std::vector<FieldError>& errors) {
  std::set<std::string> seen;
  std::vector<std::string> shown;
  for (const FieldError& e : errors) {
    std::string text = e.ToString();
    if (seen.insert(text).second) shown.push_back(std::move(text));
  }
  if (shown.empty()) return "";
  if (shown.size() == 1) return shown[0];
  std::string out = "[";
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i > 0) out += ", ";
    out += shown[i];
  }
  return out + "]";
}

}  // namespace coach::trainer
