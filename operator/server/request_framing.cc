#include "operator/server/request_framing.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"

namespace coach::server {
namespace {

constexpr absl::string_view kHeadEnd = "\r\n\r\n";

RequestFrame Refuse(absl::string_view status) {
  RequestFrame frame;
  frame.kind = RequestFrame::Kind::kRefused;
  frame.refusal = std::string(status);
  return frame;
}

RequestFrame BadRequest() { return Refuse("400 Bad Request"); }

// Content-Length: digits only; a value past uint64 is merely too large, not malformed.
bool ParseLength(absl::string_view value, uint64_t* length) {
  if (value.empty()) return false;
  for (char c : value) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  if (!absl::SimpleAtoi(value, length)) *length = std::numeric_limits<uint64_t>::max();
  return true;
}

}  // namespace

RequestFrame FrameRequest(absl::string_view received, size_t max_request_head_bytes,
                          size_t max_body_bytes) {
  const size_t end = received.find(kHeadEnd);
  if (end == absl::string_view::npos) {
    return received.size() > max_request_head_bytes ? Refuse("431 Request Header Fields Too Large")
                                                    : RequestFrame{};
  }
  const size_t head_size = end + kHeadEnd.size();
  if (head_size > max_request_head_bytes) return Refuse("431 Request Header Fields Too Large");

  // Lines end in CRLF only: httplib ends a line at a bare LF too, and a line that one reader
  // splits and the other does not could hide a Content-Length from either.
  const absl::string_view head = received.substr(0, end + 2);
  for (size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) return BadRequest();
    if (head[i] == '\r' && (i + 1 == head.size() || head[i + 1] != '\n')) return BadRequest();
  }

  size_t line_start = head.find("\r\n") + 2;  // past the request line
  const absl::string_view request_line = head.substr(0, line_start - 2);
  bool has_length = false;
  uint64_t length = 0;
  bool encoded = false;
  bool expects_continue = false;
  while (line_start < head.size()) {
    const size_t line_end = head.find("\r\n", line_start);
    const absl::string_view line = head.substr(line_start, line_end - line_start);
    line_start = line_end + 2;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || colon == 0) return BadRequest();
    const absl::string_view name = line.substr(0, colon);
    // A leading blank is an obsolete folded line; a blank before the colon a name that other
    // parsers read differently.
    if (name.find_first_of(" \t") != absl::string_view::npos) return BadRequest();
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "Content-Length")) {
      uint64_t parsed = 0;
      if (!ParseLength(value, &parsed) || (has_length && parsed != length)) return BadRequest();
      has_length = true;
      length = parsed;
    } else if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      return Refuse("411 Length Required");
    } else if (absl::EqualsIgnoreCase(name, "Content-Encoding")) {
      encoded = !absl::EqualsIgnoreCase(value, "identity");
    } else if (absl::EqualsIgnoreCase(name, "Expect")) {
      expects_continue = absl::EqualsIgnoreCase(value, "100-continue");
    }
  }
  if (encoded && length > 0) return Refuse("415 Unsupported Media Type");

  RequestFrame frame;
  frame.kind = RequestFrame::Kind::kFramed;
  frame.head_size = head_size;
  if (length > max_body_bytes) {
    frame.body_unread = true;
  } else {
    frame.body_size = static_cast<size_t>(length);
    // An HTTP/1.0 client does not know 100 Continue.
    frame.expects_continue =
        expects_continue && frame.body_size > 0 && absl::EndsWith(request_line, " HTTP/1.1");
  }
  return frame;
}

}  // namespace coach::server
