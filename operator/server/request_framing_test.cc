// Where a request ends, from its head alone: one case a line, as the reader thread sees the
// bytes a connection received.

#include "operator/server/request_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace coach::server {
namespace {

constexpr size_t kMaxHead = 256;
constexpr size_t kMaxBody = 100;

struct Case {
  const char* scenario;
  std::string received;
  RequestFrame::Kind kind;
  std::string refusal = "";  // kRefused
  size_t request_size = 0;   // kFramed
  bool body_unread = false;
  bool expects_continue = false;
};

TEST(RequestFramingTest, Table) {
  const std::string post = "POST /v HTTP/1.1\r\nHost: x\r\n";
  const Case cases[] = {
      {"a head still arriving", "GET / HTTP/1.1\r\nHost: x\r\n", RequestFrame::Kind::kIncomplete},
      {"a head without a body", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", RequestFrame::Kind::kFramed,
       "", 27},
      {"a body still arriving: its end is known", post + "Content-Length: 5\r\n\r\nhe",
       RequestFrame::Kind::kFramed, "", post.size() + 21 + 5},
      {"a pipelined request after the body is not part of it",
       post + "content-length:  5 \r\n\r\nhelloGET / HTTP/1.1\r\n\r\n", RequestFrame::Kind::kFramed,
       "", post.size() + 23 + 5},
      {"the same length twice", post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
       RequestFrame::Kind::kFramed, "", post.size() + 40 + 5},
      {"a body past the bound stays unread", post + "Content-Length: 101\r\n\r\nxx",
       RequestFrame::Kind::kFramed, "", post.size() + 23, true},
      {"a length past uint64 is too large, not malformed",
       post + "Content-Length: 99999999999999999999999\r\n\r\n", RequestFrame::Kind::kFramed, "",
       post.size() + 43, true},
      {"HTTP/1.1 waits for 100 Continue",
       post + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n", RequestFrame::Kind::kFramed, "",
       post.size() + 43 + 5, false, true},
      {"HTTP/1.0 does not", "POST /v HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n",
       RequestFrame::Kind::kFramed, "", 61 + 5},
      {"identity is no encoding", post + "Content-Length: 1\r\nContent-Encoding: identity\r\n\r\n",
       RequestFrame::Kind::kFramed, "", post.size() + 49 + 1},
      {"a head past the bound, complete",
       "GET / HTTP/1.1\r\nX: " + std::string(300, 'a') + "\r\n\r\n", RequestFrame::Kind::kRefused,
       "431 Request Header Fields Too Large"},
      {"a head past the bound, incomplete", "GET / HTTP/1.1\r\nX: " + std::string(300, 'a'),
       RequestFrame::Kind::kRefused, "431 Request Header Fields Too Large"},
      {"two lengths that differ", post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
       RequestFrame::Kind::kRefused, "400 Bad Request"},
      {"a length that is no number", post + "Content-Length: 5a\r\n\r\n",
       RequestFrame::Kind::kRefused, "400 Bad Request"},
      {"a signed length", post + "Content-Length: +5\r\n\r\n", RequestFrame::Kind::kRefused,
       "400 Bad Request"},
      {"a list of lengths", post + "Content-Length: 5, 5\r\n\r\n", RequestFrame::Kind::kRefused,
       "400 Bad Request"},
      {"an empty length", post + "Content-Length:\r\n\r\n", RequestFrame::Kind::kRefused,
       "400 Bad Request"},
      {"a blank before the colon", post + "Content-Length : 5\r\n\r\nhello",
       RequestFrame::Kind::kRefused, "400 Bad Request"},
      {"a folded line", post + "X: a\r\n b\r\n\r\n", RequestFrame::Kind::kRefused,
       "400 Bad Request"},
      {"a bare LF", post + "Content-Length: 5\nX: y\r\n\r\n", RequestFrame::Kind::kRefused,
       "400 Bad Request"},
      {"a bare CR", post + "X: a\rb\r\n\r\n", RequestFrame::Kind::kRefused, "400 Bad Request"},
      {"a line without a colon", post + "nonsense\r\n\r\n", RequestFrame::Kind::kRefused,
       "400 Bad Request"},
      {"chunked", post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
       RequestFrame::Kind::kRefused, "411 Length Required"},
      {"chunked beside a length", post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
       RequestFrame::Kind::kRefused, "411 Length Required"},
      {"a compressed body", post + "Content-Length: 5\r\nContent-Encoding: gzip\r\n\r\n",
       RequestFrame::Kind::kRefused, "415 Unsupported Media Type"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    const RequestFrame frame = FrameRequest(c.received, kMaxHead, kMaxBody);
    ASSERT_EQ(frame.kind, c.kind);
    EXPECT_EQ(frame.refusal, c.refusal);
    if (c.kind != RequestFrame::Kind::kFramed) continue;
    EXPECT_EQ(frame.request_size(), c.request_size);
    EXPECT_EQ(frame.body_unread, c.body_unread);
    EXPECT_EQ(frame.expects_continue, c.expects_continue);
  }
}

TEST(RequestFramingTest, NoBodiesMeansEveryBodyStaysUnread) {
  const std::string head = "POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\n";
  const RequestFrame frame = FrameRequest(head + "x", kMaxHead, /*max_body_bytes=*/0);
  ASSERT_EQ(frame.kind, RequestFrame::Kind::kFramed);
  EXPECT_TRUE(frame.body_unread);
  EXPECT_EQ(frame.request_size(), head.size());  // the head alone
  const RequestFrame empty =
      FrameRequest("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", kMaxHead, 0);
  EXPECT_FALSE(empty.body_unread);
}

}  // namespace
}  // namespace coach::server
