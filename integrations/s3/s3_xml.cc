#include "integrations/s3/s3_xml.h"

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace coach::s3 {
namespace {

absl::Status Malformed(absl::string_view why, size_t at) {
  return absl::InvalidArgumentError(absl::StrCat("malformed S3 XML at byte ", at, ": ", why));
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == ':' || static_cast<unsigned char>(c) >= 0x80;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Appends `text` (character data between tags) to `out` with its references resolved.
absl::Status DecodeText(absl::string_view text, size_t at, std::string* out) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&') {
      out->push_back(text[i]);
      continue;
    }
    const size_t semi = text.find(';', i);
    if (semi == absl::string_view::npos || semi - i > 12) {
      return Malformed("unterminated reference", at + i);
    }
    absl::string_view ref = text.substr(i + 1, semi - i - 1);
    if (ref == "lt") {
      out->push_back('<');
    } else if (ref == "gt") {
      out->push_back('>');
    } else if (ref == "amp") {
      out->push_back('&');
    } else if (ref == "quot") {
      out->push_back('"');
    } else if (ref == "apos") {
      out->push_back('\'');
    } else if (absl::StartsWith(ref, "#")) {
      uint32_t cp = 0;
      const bool hex = absl::StartsWith(ref, "#x");
      absl::string_view digits = ref.substr(hex ? 2 : 1);
      bool ok = !digits.empty() && digits.size() <= 8;
      for (char c : digits) {
        if (!ok) break;
        const int d = absl::ascii_isdigit(static_cast<unsigned char>(c)) ? c - '0'
                      : hex && absl::ascii_isxdigit(static_cast<unsigned char>(c))
                          ? absl::ascii_tolower(static_cast<unsigned char>(c)) - 'a' + 10
                          : -1;
        ok = d >= 0;
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(d);
      }
      if (!ok || cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return Malformed("bad character reference", at + i);
      }
      AppendUtf8(cp, out);
    } else {
      return Malformed("undefined entity", at + i);
    }
    i = semi;
  }
  return absl::OkStatus();
}

// Called when an element opens (`text` empty) and when it closes (`text`: its character
// data, whatever children it had). `path` holds the local names from the root to the element.
using Visitor = std::function<absl::Status(const std::vector<std::string>& path, bool open,
                                           const std::string& text)>;

absl::Status Walk(absl::string_view xml, const Visitor& visit) {
  if (xml.size() > kMaxXmlBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("S3 XML answer of ", xml.size(), " bytes (at most ", kMaxXmlBytes, ")"));
  }
  std::vector<std::string> path;
  std::vector<std::string> texts;
  bool seen_root = false;
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      const size_t lt = xml.find('<', i);
      const size_t end = lt == absl::string_view::npos ? xml.size() : lt;
      absl::string_view text = xml.substr(i, end - i);
      if (path.empty()) {
        if (!absl::StripAsciiWhitespace(text).empty()) {
          return Malformed("text outside the root element", i);
        }
      } else {
        absl::Status s = DecodeText(text, i, &texts.back());
        if (!s.ok()) return s;
      }
      i = end;
      continue;
    }
    absl::string_view rest = xml.substr(i);
    if (absl::StartsWith(rest, "<!--")) {
      const size_t end = xml.find("-->", i + 4);
      if (end == absl::string_view::npos) return Malformed("unterminated comment", i);
      i = end + 3;
      continue;
    }
    if (absl::StartsWith(rest, "<?")) {
      if (i != 0 || !absl::StartsWith(rest, "<?xml")) {
        return Malformed("processing instruction other than the declaration", i);
      }
      const size_t end = xml.find("?>", i);
      if (end == absl::string_view::npos) return Malformed("unterminated declaration", i);
      i = end + 2;
      continue;
    }
    if (absl::StartsWith(rest, "<!")) return Malformed("DOCTYPE or CDATA", i);
    const bool closing = absl::StartsWith(rest, "</");
    size_t j = i + (closing ? 2 : 1);
    const size_t name_start = j;
    while (j < xml.size() && IsNameChar(xml[j])) ++j;
    if (j == name_start) return Malformed("tag without a name", i);
    std::string name(xml.substr(name_start, j - name_start));
    if (const size_t colon = name.rfind(':'); colon != std::string::npos) {
      name = name.substr(colon + 1);  // a namespace prefix
    }
    // Attributes (skipped), honouring quotes so that a '>' inside a value does not end the tag.
    bool self_closing = false;
    for (;;) {
      if (j >= xml.size()) return Malformed("unterminated tag", i);
      const char c = xml[j];
      if (c == '>') {
        ++j;
        break;
      }
      if (c == '/' && !closing && j + 1 < xml.size() && xml[j + 1] == '>') {
        self_closing = true;
        j += 2;
        break;
      }
      if (c == '"' || c == '\'') {
        const size_t q = xml.find(c, j + 1);
        if (q == absl::string_view::npos) return Malformed("unterminated attribute value", j);
        j = q + 1;
        continue;
      }
      if (closing && !absl::ascii_isspace(static_cast<unsigned char>(c))) {
        return Malformed("junk in a closing tag", j);
      }
      if (c == '<') return Malformed("'<' inside a tag", j);
      ++j;
    }
    if (closing) {
      if (path.empty() || path.back() != name) return Malformed("mismatched closing tag", i);
      absl::Status s = visit(path, /*open=*/false, texts.back());
      if (!s.ok()) return s;
      path.pop_back();
      texts.pop_back();
    } else {
      if (path.empty() && seen_root) return Malformed("a second root element", i);
      if (path.size() >= static_cast<size_t>(kMaxXmlDepth)) {
        return Malformed("elements nested too deep", i);
      }
      seen_root = true;
      path.push_back(std::move(name));
      texts.emplace_back();
      absl::Status s = visit(path, /*open=*/true, texts.back());
      if (!s.ok()) return s;
      if (self_closing) {
        s = visit(path, /*open=*/false, texts.back());
        if (!s.ok()) return s;
        path.pop_back();
        texts.pop_back();
      }
    }
    i = j;
  }
  if (!path.empty()) return Malformed("unclosed element <" + path.back() + ">", xml.size());
  if (!seen_root) return Malformed("no root element", xml.size());
  return absl::OkStatus();
}

std::string Printable(absl::string_view s) {
  constexpr size_t kMax = 300;
  std::string out = absl::CHexEscape(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace

absl::StatusOr<ListPage> ParseListObjectsV2(absl::string_view xml) {
  ListPage page;
  ObjectInfo current;
  bool has_key = false, has_size = false, has_time = false;
  bool has_truncated = false;
  absl::Status s =
      Walk(xml,
           [&](const std::vector<std::string>& path, bool open,
               const std::string& text) -> absl::Status {
             if (path.front() != "ListBucketResult") {
               return absl::InvalidArgumentError(
                   absl::StrCat("S3 listing: root element <", Printable(path.front()),
                                "> where <ListBucketResult> belongs"));
             }
             if (path.size() == 2 && path[1] == "Contents") {
               if (open) {
                 current = ObjectInfo();
                 has_key = has_size = has_time = false;
                 return absl::OkStatus();
               }
               if (!has_key || !has_size || !has_time) {
                 return absl::InvalidArgumentError(
                     "S3 listing: a <Contents> without <Key>, <Size> or <LastModified>");
               }
               page.objects.push_back(std::move(current));
               return absl::OkStatus();
             }
             if (open) return absl::OkStatus();
             const absl::string_view value = absl::StripAsciiWhitespace(text);
             if (path.size() == 2 && path[1] == "IsTruncated") {
               if (value != "true" && value != "false") {
                 return absl::InvalidArgumentError(
                     absl::StrCat("S3 listing: <IsTruncated> is \"", Printable(value), "\""));
               }
               page.is_truncated = value == "true";
               has_truncated = true;
             } else if (path.size() == 2 && path[1] == "NextContinuationToken") {
               page.next_continuation_token = text;
             } else if (path.size() == 3 && path[1] == "Contents") {
               if (path[2] == "Key") {
                 current.key = text;  // exact: a key may begin or end with spaces
                 has_key = true;
               } else if (path[2] == "Size") {
                 if (!absl::SimpleAtoi(value, &current.size) || value.empty() || value[0] == '-' ||
                     value[0] == '+') {
                   return absl::InvalidArgumentError(
                       absl::StrCat("S3 listing: <Size> is \"", Printable(value), "\""));
                 }
                 has_size = true;
               } else if (path[2] == "LastModified") {
                 std::string err;
                 if (!absl::ParseTime(absl::RFC3339_full, std::string(value),
                                      &current.last_modified, &err)) {
                   return absl::InvalidArgumentError(
                       absl::StrCat("S3 listing: <LastModified> is \"", Printable(value), "\""));
                 }
                 has_time = true;
               }
             }
             return absl::OkStatus();
           });
  if (!s.ok()) return s;
  if (!has_truncated) return absl::InvalidArgumentError("S3 listing: no <IsTruncated>");
  if (page.is_truncated && page.next_continuation_token.empty()) {
    return absl::InvalidArgumentError("S3 listing: truncated without <NextContinuationToken>");
  }
  return page;
}

S3Error ParseS3Error(absl::string_view body) {
  S3Error error;
  std::string code, message;
  bool is_error = false;
  absl::Status s = Walk(body,
                        [&](const std::vector<std::string>& path, bool open,
                            const std::string& text) -> absl::Status {
                          if (path.size() == 1 && open) is_error = path[0] == "Error";
                          if (!is_error || open || path.size() != 2) return absl::OkStatus();
                          if (path[1] == "Code")
                            code = std::string(absl::StripAsciiWhitespace(text));
                          if (path[1] == "Message")
                            message = std::string(absl::StripAsciiWhitespace(text));
                          return absl::OkStatus();
                        });
  if (s.ok() && is_error) {
    error.code = Printable(code);
    error.message = Printable(message);
  } else {
    error.message = Printable(absl::StripAsciiWhitespace(body));
  }
  return error;
}

}  // namespace coach::s3
