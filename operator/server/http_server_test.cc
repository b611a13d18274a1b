// The HTTP endpoints against clients that misbehave on purpose: idle and half-open
// connections, a request or a body trickled byte by byte, more connections than the server
// holds, pipelined requests, bodies too large or badly framed, oversized heads and a full
// queue; and the routes a caller gives. Real sockets on loopback (HTTPS: https_server_test).

#include "operator/server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "operator/metrics/registry.h"
#include "operator/server/testing/loopback_socket.h"

namespace coach::server {
namespace {

using ::coach::server::testing::ReadUntilClosed;

int Connect(int port) { return testing::ConnectLoopback(port); }
bool Send(int fd, const std::string& bytes) { return testing::SendAll(fd, bytes); }

// Opens `n` connections that never send a byte.
std::vector<int> Idle(int port, int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const int fd = Connect(port);
    EXPECT_GE(fd, 0) << "connection " << i;
    if (fd >= 0) fds.push_back(fd);
  }
  return fds;
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// GET `path` on a fresh connection with a client that gives up after `timeout`; the status,
// or -1 without an answer.
int Get(int port, const std::string& path, absl::Duration timeout = absl::Seconds(2)) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(absl::ToChronoSeconds(timeout));
  client.set_read_timeout(absl::ToChronoSeconds(timeout));
  auto res = client.Get(path.c_str());
  return res ? res->status : -1;
}

int CountOf(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

struct Servers {
  explicit Servers(HttpServerOptions main_options = {},
                   HttpServerOptions probe_options = HttpServerOptions::Probe()) {
    registry.Counter("coach_test_total", "test");
    auto started = HttpServer::Start("127.0.0.1:0", ready, &registry, main_options);
    EXPECT_TRUE(started.ok()) << started.status();
    main = *std::move(started);
    auto probe_started = HttpServer::Start("127.0.0.1:0", ready, nullptr, probe_options);
    EXPECT_TRUE(probe_started.ok()) << probe_started.status();
    probe = *std::move(probe_started);
  }
  metrics::Registry registry;
  std::function<bool()> ready = [] { return true; };
  std::unique_ptr<HttpServer> main;
  std::unique_ptr<HttpServer> probe;
};

TEST(HttpServerTest, HealthAnswersBesideManyIdleConnections) {
  Servers s;
  // Were a connection to hold a worker until its read timed out, eight of these would hold them
  // all.
  const absl::Time connecting = absl::Now();
  std::vector<int> idle = Idle(s.main->port(), 64);
  std::vector<int> idle_probe = Idle(s.probe->port(), 64);
  // No connection of the burst waited for a SYN retransmission (a full listen backlog).
  EXPECT_LT(absl::Now() - connecting, absl::Seconds(1));
  const absl::Time start = absl::Now();
  EXPECT_EQ(Get(s.main->port(), "/healthz"), 200);
  EXPECT_EQ(Get(s.main->port(), "/metrics"), 200);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  const absl::Time probe_start = absl::Now();
  EXPECT_EQ(Get(s.probe->port(), "/healthz"), 200);
  EXPECT_EQ(Get(s.probe->port(), "/readyz"), 200);
  EXPECT_LT(absl::Now() - probe_start, absl::Milliseconds(500));
  CloseAll(idle);
  CloseAll(idle_probe);
}

TEST(HttpServerTest, ConnectionsPastTheBoundCloseTheOldestAtOnce) {
  HttpServerOptions options;
  options.max_connections = 8;
  options.idle_timeout = absl::Seconds(30);
  Servers s(options);
  std::vector<int> idle = Idle(s.main->port(), 20);
  // The 12 held longest are closed as the last 8 arrive, long before their idle timeout.
  for (int i = 0; i < 12; ++i) {
    bool closed = false;
    ReadUntilClosed(idle[i], absl::Seconds(2), &closed);
    EXPECT_TRUE(closed) << "connection " << i;
  }
  EXPECT_EQ(Get(s.main->port(), "/healthz"), 200);
  // The probe listener, flooded past its own bound, still answers.
  std::vector<int> idle_probe = Idle(s.probe->port(), 200);
  const absl::Time start = absl::Now();
  EXPECT_EQ(Get(s.probe->port(), "/healthz"), 200);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  CloseAll(idle);
  CloseAll(idle_probe);
}

TEST(HttpServerTest, SlowlorisIsDroppedAtTheRequestTimeout) {
  HttpServerOptions options;
  options.request_timeout = absl::Seconds(1);
  Servers s(options);
  const int fd = Connect(s.main->port());
  ASSERT_GE(fd, 0);
  const absl::Time start = absl::Now();
  // A byte every 100 ms: each read alone would be quick, the request never ends.
  ASSERT_TRUE(Send(fd, "GET /healthz HTTP/1.1\r\nX-Slow: "));
  bool closed = false;
  while (absl::Now() - start < absl::Seconds(5)) {
    if (!Send(fd, "a")) {
      closed = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char c;
      if (recv(fd, &c, 1, 0) <= 0) {
        closed = true;
        break;
      }
    }
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(closed);
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Seconds(2));
  close(fd);
}

TEST(HttpServerTest, SilentConnectionIsClosedAtTheIdleTimeout) {
  HttpServerOptions options;
  options.idle_timeout = absl::Milliseconds(500);
  Servers s(options);
  const int fd = Connect(s.main->port());
  ASSERT_GE(fd, 0);
  const absl::Time start = absl::Now();
  bool closed = false;
  ReadUntilClosed(fd, absl::Seconds(3), &closed);
  EXPECT_TRUE(closed);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1500));
  close(fd);
}

TEST(HttpServerTest, KeepAliveEndsAfterMaxRequests) {
  HttpServerOptions options;
  options.max_requests_per_connection = 3;
  Servers s(options);
  const int fd = Connect(s.main->port());
  ASSERT_GE(fd, 0);
  std::string requests;
  for (int i = 0; i < 5; ++i) requests += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(Send(fd, requests));  // pipelined: one write, five requests
  bool closed = false;
  const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(CountOf(got, "HTTP/1.1 200 OK"), 3) << got;
  EXPECT_EQ(CountOf(got, "Connection: close"), 1) << got;
  close(fd);
}

TEST(HttpServerTest, KeptAliveConnectionServesAgain) {
  Servers s;
  httplib::Client client("127.0.0.1", s.main->port());
  client.set_keep_alive(true);
  for (int i = 0; i < 5; ++i) {
    auto res = client.Get("/healthz");
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->body, "ok\n");
  }
}

TEST(HttpServerTest, BodiesOversizedHeadsAndUnknownPathsAreRefused) {
  Servers s;
  {
    const int fd = Connect(s.main->port());
    ASSERT_TRUE(Send(fd, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
    bool closed = false;
    const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
    EXPECT_TRUE(closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 405", 0), 0u) << got;
    close(fd);
  }
  {
    const int fd = Connect(s.main->port());
    ASSERT_TRUE(Send(
        fd, absl::StrCat("GET /healthz HTTP/1.1\r\nX-Big: ", std::string(20000, 'a'), "\r\n\r\n")));
    bool closed = false;
    const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
    EXPECT_TRUE(closed);
    EXPECT_EQ(got.rfind("HTTP/1.1 431", 0), 0u) << got;
    close(fd);
  }
  EXPECT_EQ(Get(s.probe->port(), "/metrics"), 404);  // the probe listener has no metrics
  EXPECT_EQ(Get(s.main->port(), "/nothing"), 404);
}

TEST(HttpServerTest, RequestsPastTheQueueAreAnswered503) {
  HttpServerOptions options;
  options.workers = 1;
  options.max_queued_requests = 1;
  options.request_timeout = absl::Seconds(10);
  metrics::Registry registry;
  absl::Notification entered, release;
  // The one worker stays in this readiness check until released.
  auto started = HttpServer::Start(
      "127.0.0.1:0",
      [&] {
        if (!entered.HasBeenNotified()) entered.Notify();
        release.WaitForNotification();
        return true;
      },
      &registry, options);
  ASSERT_TRUE(started.ok());
  const int port = (*started)->port();
  const std::string readyz = "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  const int busy = Connect(port);  // holds the one worker
  ASSERT_TRUE(Send(busy, readyz));
  entered.WaitForNotification();
  const int queued = Connect(port);
  ASSERT_TRUE(Send(queued, readyz));
  absl::SleepFor(absl::Milliseconds(200));  // the reader thread queues it
  const int refused = Connect(port);
  ASSERT_TRUE(Send(refused, readyz));
  bool closed = false;
  EXPECT_EQ(ReadUntilClosed(refused, absl::Seconds(2), &closed).rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_TRUE(closed);
  release.Notify();
  for (int fd : {busy, queued}) {
    EXPECT_EQ(ReadUntilClosed(fd, absl::Seconds(3), &closed).rfind("HTTP/1.1 200", 0), 0u);
    close(fd);
  }
  close(refused);
}

TEST(HttpServerTest, StopEndsEveryConnection) {
  Servers s;
  std::vector<int> idle = Idle(s.main->port(), 4);
  const int slow = Connect(s.main->port());
  ASSERT_TRUE(Send(slow, "GET /hea"));
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  s.main->Stop();
  s.main->Stop();  // idempotent
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  idle.push_back(slow);
  for (int fd : idle) {
    bool closed = false;
    ReadUntilClosed(fd, absl::Seconds(1), &closed);
    EXPECT_TRUE(closed);
  }
  CloseAll(idle);
  EXPECT_EQ(Get(s.main->port(), "/healthz", absl::Seconds(1)), -1);
}

TEST(HttpServerTest, StartRefusesBadAddressesAndOptions) {
  EXPECT_EQ(HttpServer::Start("nope", nullptr, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  HttpServerOptions bad;
  bad.workers = 0;
  EXPECT_EQ(HttpServer::Start("127.0.0.1:0", nullptr, nullptr, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Stopped at once: the accept loop may not have begun yet.
  for (int i = 0; i < 20; ++i) {
    auto started = HttpServer::Start("127.0.0.1:0", nullptr, nullptr);
    ASSERT_TRUE(started.ok());
  }
}

// A POST route that echoes its body, and a GET route; the number of calls in `calls`.
Routes EchoRoutes(std::atomic<int>* calls) {
  return {
      {"POST", "/echo",
       [calls](const HttpRequest& req) {
         ++*calls;
         HttpResponse res;
         res.content_type = "application/json";
         res.body = absl::StrCat(
             req.method, " ", req.Header("content-type"), " ",
             req.params.count("timeout") ? req.params.find("timeout")->second : "-", " ", req.body);
         res.headers.emplace_back("X-Echo", "1");
         return res;
       }},
      {"GET", "/echo",
       [](const HttpRequest&) {
         return HttpResponse{200, "text/plain", "got\n", {}};
       }},
      {"PUT", "/put-only",
       [](const HttpRequest&) {
         return HttpResponse{204, "text/plain", "", {}};
       }},
  };
}

std::unique_ptr<HttpServer> ServeEcho(std::atomic<int>* calls, HttpServerOptions options) {
  auto served = HttpServer::Serve("127.0.0.1:0", EchoRoutes(calls), options);
  EXPECT_TRUE(served.ok()) << served.status();
  return served.ok() ? *std::move(served) : nullptr;
}

HttpServerOptions WithBodies(size_t max_body_bytes) {
  HttpServerOptions options;
  options.max_body_bytes = max_body_bytes;
  return options;
}

TEST(HttpServerServeTest, RoutesByMethodAndExactPath) {
  std::atomic<int> calls{0};
  auto server = ServeEcho(&calls, WithBodies(1024));
  ASSERT_NE(server, nullptr);
  httplib::Client client("127.0.0.1", server->port());
  auto post = client.Post("/echo?timeout=10s", "{\"a\":1}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 200);
  EXPECT_EQ(post->body, "POST application/json 10s {\"a\":1}");
  EXPECT_EQ(post->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(post->get_header_value("X-Echo"), "1");
  auto head = client.Head("/echo");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->body, "");
  auto put = client.Put("/echo", "x", "text/plain");  // the path is routed, the method not
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 405);
  EXPECT_EQ(put->get_header_value("Allow"), "GET, HEAD, POST");
  auto get = client.Get("/put-only");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "PUT");
  auto unknown = client.Post("/echo/", "x", "text/plain");  // exact paths only
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServerServeTest, PipelinedBodiesAreEachTheirOwnRequest) {
  std::atomic<int> calls{0};
  auto server = ServeEcho(&calls, WithBodies(1024));
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  // One write: a body that looks like a request, a request without a body (no
  // Content-Length: it has none), and a last one that closes.
  ASSERT_TRUE(
      Send(fd,
           "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 18\r\n\r\nGET /echo HTTP/1.1"
           "POST /echo HTTP/1.1\r\nHost: x\r\n\r\n"
           "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
           "end"));
  bool closed = false;
  const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(CountOf(got, "HTTP/1.1 200 OK"), 3) << got;
  EXPECT_NE(got.find("POST  - GET /echo HTTP/1.1"), std::string::npos) << got;
  EXPECT_NE(got.find("POST  - end"), std::string::npos) << got;
  EXPECT_EQ(calls.load(), 3);
  close(fd);
}

TEST(HttpServerServeTest, BodyPastTheBoundIs413WithoutBeingRead) {
  std::atomic<int> calls{0};
  HttpServerOptions options = WithBodies(16);
  options.request_timeout = absl::Seconds(10);
  auto server = ServeEcho(&calls, options);
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  // Only the head: were the server to wait for the body, no answer would come for 10 s.
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n"));
  bool closed = false;
  const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
  EXPECT_TRUE(closed);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_EQ(calls.load(), 0);
  close(fd);
  // Within the bound: served.
  httplib::Client client("127.0.0.1", server->port());
  auto res = client.Post("/echo", std::string(16, 'b'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServerServeTest, BodiesPastTheServersTotalAre503UntilOthersAreAnswered) {
  std::atomic<int> calls{0};
  HttpServerOptions options = WithBodies(600);
  options.max_buffered_body_bytes = 1000;
  options.request_timeout = absl::Seconds(10);
  auto server = ServeEcho(&calls, options);
  ASSERT_NE(server, nullptr);
  // A body of 600 announced and still to come holds its share of the total.
  const int slow = Connect(server->port());
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(Send(slow, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\n\r\n"));
  httplib::Client client("127.0.0.1", server->port());
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  int status = 0;
  do {  // until the reader thread has framed the first head
    auto refused = client.Post("/echo", std::string(500, 'b'), "text/plain");
    status = refused ? refused->status : -1;
  } while (status == 200 && absl::Now() < deadline);
  EXPECT_EQ(status, 503);
  auto small = client.Post("/echo", std::string(400, 's'), "text/plain");  // 600 + 400 fit
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
  ASSERT_TRUE(Send(slow, std::string(600, 'a')));
  bool closed = false;
  const std::string got = ReadUntilClosed(slow, absl::Milliseconds(500), &closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  close(slow);
  // Answered: its share is back.
  auto after = client.Post("/echo", std::string(600, 'c'), "text/plain");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST(HttpServerServeTest, BadlyFramedRequestsAreRefusedAndClosed) {
  std::atomic<int> calls{0};
  auto server = ServeEcho(&calls, WithBodies(1024));
  ASSERT_NE(server, nullptr);
  const std::pair<std::string, std::string> cases[] = {
      {"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "HTTP/1.1 411"},
      {"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "HTTP/1.1 400"},
      {"Content-Length: five\r\n\r\nhello", "HTTP/1.1 400"},
      {"Content-Length: 5\r\nContent-Encoding: gzip\r\n\r\nhello", "HTTP/1.1 415"},
  };
  for (const auto& [headers, status] : cases) {
    const int fd = Connect(server->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(Send(fd, absl::StrCat("POST /echo HTTP/1.1\r\nHost: x\r\n", headers)));
    bool closed = false;
    const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
    EXPECT_TRUE(closed) << headers;
    EXPECT_EQ(got.rfind(status, 0), 0u) << headers << "\n" << got;
    close(fd);
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServerServeTest, TrickledBodyIsDroppedWithoutHoldingTheWorker) {
  std::atomic<int> calls{0};
  HttpServerOptions options = WithBodies(1024);
  options.workers = 1;
  options.request_timeout = absl::Seconds(1);
  auto server = ServeEcho(&calls, options);
  ASSERT_NE(server, nullptr);
  const int slow = Connect(server->port());
  ASSERT_GE(slow, 0);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Send(slow, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"));
  bool prompt_answered = false;
  bool closed = false;
  while (absl::Now() - start < absl::Seconds(5)) {
    if (!Send(slow, "c")) {
      closed = true;
      break;
    }
    if (!prompt_answered && absl::Now() - start > absl::Milliseconds(300)) {
      // The one worker is free: the trickled body waits in the reader thread.
      const absl::Time asked = absl::Now();
      httplib::Client client("127.0.0.1", server->port());
      auto res = client.Post("/echo", "quick", "text/plain");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 200);
      EXPECT_LT(absl::Now() - asked, absl::Milliseconds(500));
      prompt_answered = true;
    }
    pollfd p{slow, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char c;
      if (recv(slow, &c, 1, 0) <= 0) {
        closed = true;
        break;
      }
    }
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(prompt_answered);
  EXPECT_TRUE(closed);
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(calls.load(), 1);  // the prompt one only
  close(slow);
}

TEST(HttpServerServeTest, ExpectContinueIsAnsweredBeforeTheBody) {
  std::atomic<int> calls{0};
  auto server = ServeEcho(&calls, WithBodies(1024));
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(Send(fd,
                   "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n"
                   "Connection: close\r\n\r\n"));
  std::string got;
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  while (got.find("\r\n\r\n") == std::string::npos && absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(Send(fd, "hello"));
  bool closed = false;
  got += ReadUntilClosed(fd, absl::Seconds(3), &closed);
  EXPECT_EQ(CountOf(got, "100 Continue"), 1) << got;
  EXPECT_NE(got.find("HTTP/1.1 200 OK"), std::string::npos) << got;
  EXPECT_NE(got.find("POST  - hello"), std::string::npos) << got;
  close(fd);
}

TEST(HttpServerServeTest, ServeRefusesBadRoutes) {
  const HttpHandler ok = [](const HttpRequest&) { return HttpResponse{}; };
  EXPECT_EQ(HttpServer::Serve("127.0.0.1:0", {{"FETCH", "/a", ok}}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::Serve("127.0.0.1:0", {{"GET", "a", ok}}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpServer::Serve("127.0.0.1:0", {{"GET", "/a", nullptr}}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      HttpServer::Serve("127.0.0.1:0", {{"GET", "/a", ok}, {"GET", "/a", ok}}, {}).status().code(),
      absl::StatusCode::kInvalidArgument);
  HttpServerOptions ca_without_tls;
  ca_without_tls.tls_client_ca_pem = "-----BEGIN CERTIFICATE-----";
  EXPECT_EQ(HttpServer::Serve("127.0.0.1:0", {{"GET", "/a", ok}}, ca_without_tls).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HttpServerServeTest, AHandlerThatThrowsIsAnswered500) {
  auto served = HttpServer::Serve(
      "127.0.0.1:0",
      {{"GET", "/boom",
        [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("secret detail"); }}},
      {});
  ASSERT_TRUE(served.ok());
  httplib::Client client("127.0.0.1", (*served)->port());
  auto res = client.Get("/boom");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_FALSE(res->has_header("EXCEPTION_WHAT"));
}

}  // namespace
}  // namespace coach::server
