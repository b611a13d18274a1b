#include "integrations/s3/object_store.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace coach::s3 {
namespace {

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not a valid one (overlong
// forms, surrogates and code points above U+10FFFF are invalid, as RFC 3629 says).
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 120;
  if (s.size() > kMax) return absl::StrCat("\"", absl::CHexEscape(s.substr(0, kMax)), "...\"");
  return absl::StrCat("\"", absl::CHexEscape(s), "\"");
}

absl::Status Check(absl::string_view what, absl::string_view s, bool is_prefix) {
  if (s.empty() && !is_prefix) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (s.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", s.size(), " bytes long (at most ",
                                                   kMaxKeyBytes, "): ", Quote(s)));
  }
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is not valid UTF-8 at byte ", i, ": ", Quote(s)));
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 1 && (c < 0x20 || c == 0x7F || c == '\\')) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " holds a control character or '\\' at byte ", i, ": ", Quote(s)));
    }
    i += n;
  }
  if (s.empty()) return absl::OkStatus();
  if (s.front() == '/') {
    return absl::InvalidArgumentError(absl::StrCat(what, " starts with '/': ", Quote(s)));
  }
  absl::string_view body = s;
  if (s.back() == '/') {
    if (!is_prefix) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ends with '/': ", Quote(s)));
    }
    body.remove_suffix(1);
  }
  for (absl::string_view segment : absl::StrSplit(body, '/')) {
    if (segment.empty() || segment == "." || segment == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has an empty, \".\" or \"..\" path segment: ", Quote(s)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateKey(absl::string_view key) { return Check("object key", key, false); }

absl::Status ValidatePrefix(absl::string_view prefix) { return Check("list prefix", prefix, true); }

}  // namespace coach::s3
