#pragma once

// Where one HTTP/1.1 request ends in the bytes a connection has received, decided from its
// head alone: the HTTP server's reader thread waits until head and body are all there before
// a worker sees the request, so that no worker ever waits for a client. Pure.
//
// Only what framing needs is read (Content-Length, Transfer-Encoding, Content-Encoding,
// Expect); the request line and the rest of the head are httplib's to parse. Whatever could
// make this reading and httplib's disagree on where the request ends is refused: bare CR or
// LF, folded lines, a header name with blanks, conflicting Content-Lengths.

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace coach::server {

struct RequestFrame {
  enum class Kind {
    kIncomplete,  // the head has not fully arrived
    kFramed,      // the head is complete: the fields below say how long the request is
    kRefused,     // answer `refusal` and close the connection
  };
  Kind kind = Kind::kIncomplete;
  // kRefused: the status, e.g. "431 Request Header Fields Too Large".
  std::string refusal;
  // kFramed: the head's bytes, blank line included, and the body's that follow it.
  size_t head_size = 0;
  size_t body_size = 0;
  // kFramed: the Content-Length passed `max_body_bytes`; the request is the head alone, its
  // body is never read and the connection closes after the answer.
  bool body_unread = false;
  // kFramed: an HTTP/1.1 client waits for "100 Continue" before it sends the body.
  bool expects_continue = false;

  size_t request_size() const { return head_size + body_size; }
};

// `received`: what the connection received since the previous request ended.
// Refusals: 431 (a head longer than `max_request_head_bytes`), 400 (malformed framing),
// 411 (Transfer-Encoding: only Content-Length bodies are read), 415 (a Content-Encoding on a
// body: a compressed body could expand far past `max_body_bytes` once decoded).
RequestFrame FrameRequest(absl::string_view received, size_t max_request_head_bytes,
                          size_t max_body_bytes);

}  // namespace coach::server
