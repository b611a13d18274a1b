#include "common/http/url.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace coach::http {
namespace {

std::string Encode(absl::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

std::string PercentEncode(absl::string_view s) { return Encode(s, /*keep_slash=*/false); }

std::string PercentEncodePath(absl::string_view path) { return Encode(path, /*keep_slash=*/true); }

std::string QueryString(const QueryParams& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    absl::StrAppend(&out, out.empty() ? "" : "&", PercentEncode(key), "=", PercentEncode(value));
  }
  return out;
}

std::string WithQuery(absl::string_view url, const QueryParams& params) {
  if (params.empty()) return std::string(url);
  return absl::StrCat(url, "?", QueryString(params));
}

}  // namespace coach::http
