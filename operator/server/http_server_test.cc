// The HTTP endpoints against clients that misbehave on purpose: idle and half-open
// connections, a request trickled byte by byte, more connections than the server holds,
// pipelined requests, bodies, oversized heads and a full queue. Real sockets on loopback.

#include "operator/server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "operator/metrics/registry.h"

namespace coach::server {
namespace {

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

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

bool Send(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Everything the server sends until it closes the connection or `timeout` passes; `closed`
// says which.
std::string ReadUntilClosed(int fd, absl::Duration timeout, bool* closed) {
  std::string out;
  const absl::Time deadline = absl::Now() + timeout;
  *closed = false;
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return out;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      *closed = true;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
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

}  // namespace
}  // namespace coach::server
