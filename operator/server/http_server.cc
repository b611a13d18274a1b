#include "operator/server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace coach::server {
namespace {

constexpr char kHeadEnd[] = "\r\n\r\n";
constexpr int kListenBacklog = 1024;  // the kernel caps it at net.core.somaxconn

void CloseSocket(int fd) {
  shutdown(fd, SHUT_RDWR);
  close(fd);
}

// Best effort: the socket is nonblocking and the client may be gone.
void RefuseAndClose(int fd, absl::string_view status) {
  const std::string response =
      absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  (void)!send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  CloseSocket(fd);
}

int PollMillis(absl::Duration left) {
  if (left <= absl::ZeroDuration()) return 0;
  // Rounded up: a poll that returns just before the deadline would spin until it passes.
  return static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), 60 * 1000));
}

void SocketAddress(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  sockaddr* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? getpeername(fd, sa, &len) : getsockname(fd, sa, &len)) != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    port = ntohs(in6->sin6_port);
  }
  ip = text;
}

// A connection between two requests: what the client sent that no request consumed yet
// (the next request's head, once complete; a pipelined one's too).
struct Connection {
  int fd = -1;
  std::string pending;
  int served = 0;  // requests answered on it
};

enum class Head { kIncomplete, kComplete, kTooLarge };

Head HeadState(const std::string& pending, size_t max_bytes) {
  const size_t end = pending.find(kHeadEnd);
  if (end == std::string::npos) {
    return pending.size() > max_bytes ? Head::kTooLarge : Head::kIncomplete;
  }
  return end + sizeof(kHeadEnd) - 1 > max_bytes ? Head::kTooLarge : Head::kComplete;
}

// One connection as httplib reads and writes it: the request head from what the reader
// thread already received, anything past it and the response through the socket, all
// within `deadline`, so that a worker is never held longer by a slow client.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(Connection* conn, absl::Time deadline, Clock* clock)
      : conn_(conn), deadline_(deadline), clock_(clock) {}

  bool is_readable() const override { return offset_ < conn_->pending.size() || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (offset_ < conn_->pending.size()) {
      const size_t n = std::min(size, conn_->pending.size() - offset_);
      std::memcpy(ptr, conn_->pending.data() + offset_, n);
      offset_ += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      const ssize_t n = recv(conn_->fd, ptr, size, MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !Wait(POLLIN)) return -1;
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      const ssize_t n = send(conn_->fd, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !Wait(POLLOUT)) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    SocketAddress(conn_->fd, /*peer=*/true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    SocketAddress(conn_->fd, /*peer=*/false, ip, port);
  }
  socket_t socket() const override { return conn_->fd; }

  // Drops from the connection's pending bytes what the request read.
  void Consume() {
    conn_->pending.erase(0, std::min(offset_, conn_->pending.size()));
    offset_ = 0;
  }

 private:
  // Whether the socket got ready for `events` before the deadline; a hang-up or an error
  // counts as ready, so that the next call reports it.
  bool Wait(short events) const {
    pollfd p{conn_->fd, events, 0};
    for (;;) {
      const int r = poll(&p, 1, PollMillis(deadline_ - clock_->Now()));
      if (r < 0 && errno == EINTR) continue;
      return r > 0;
    }
  }

  Connection* conn_;
  size_t offset_ = 0;
  const absl::Time deadline_;
  Clock* const clock_;
};

// httplib gives each accepted socket to its task queue, whose task hands it to
// process_and_close_socket. Run at once, on the accept thread, that task only passes the
// socket to the reader thread: accepting never waits for a worker.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

absl::Status CheckOptions(const HttpServerOptions& o) {
  if (o.max_connections < 1 || o.workers < 1 || o.max_queued_requests < 0 ||
      o.max_requests_per_connection < 1 || o.max_request_head_bytes < 64 ||
      o.idle_timeout <= absl::ZeroDuration() || o.request_timeout <= absl::ZeroDuration() ||
      o.clock == nullptr) {
    return absl::InvalidArgumentError("HttpServerOptions: a bound is not positive");
  }
  return absl::OkStatus();
}

}  // namespace

HttpServerOptions HttpServerOptions::Probe() {
  HttpServerOptions o;
  o.max_connections = 64;
  o.idle_timeout = absl::Seconds(2);
  o.request_timeout = absl::Seconds(2);
  o.max_request_head_bytes = 4 * 1024;
  o.max_requests_per_connection = 10;
  o.workers = 1;
  o.max_queued_requests = 64;
  return o;
}

// httplib parses, routes and writes responses (process_request); this class owns the
// sockets: admission, the reader thread's waiting, the workers and every deadline.
class HttpServer::Impl : public httplib::Server {
 public:
  explicit Impl(const HttpServerOptions& options) : options_(options) {
    new_task_queue = [] { return new InlineQueue(); };
    // Only what httplib itself still does with them: the Keep-Alive header it advertises and
    // the timeouts it sets on accepted sockets, which this class reads without blocking.
    set_keep_alive_max_count(static_cast<size_t>(options.max_requests_per_connection));
    set_keep_alive_timeout(absl::ToInt64Seconds(options.idle_timeout));
    set_read_timeout(absl::ToChronoSeconds(options.request_timeout));
    set_write_timeout(absl::ToChronoSeconds(options.request_timeout));
    set_payload_max_length(options.max_request_head_bytes);
    // Only GET and HEAD are served: a body is never read, and its connection not reused.
    set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      if (req.method == "GET" || req.method == "HEAD") return HandlerResponse::Unhandled;
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      return HandlerResponse::Handled;
    });
  }
  ~Impl() override { Shutdown(); }

  absl::Status Run() {
    // The Debian build of httplib listens with a backlog of 5: a burst of connections,
    // idle ones included, would fill it and a prompt client's SYN would wait for its
    // retransmission (1 s, then 3 s). Listening again only changes the backlog.
    if (::listen(svr_sock_, kListenBacklog) != 0) {
      return absl::InternalError(absl::StrCat("listen: ", std::strerror(errno)));
    }
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
    read_thread_ = std::thread([this] { ReadLoop(); });
    for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { WorkLoop(); });
    accept_thread_ = std::thread([this] { listen_after_bind(); });
    return absl::OkStatus();
  }

  void Shutdown() {
    // What Server::stop() does, without its wait for the accept loop to have begun: a
    // server stopped right after Start would otherwise never end its accept thread.
    const socket_t listener = svr_sock_.exchange(INVALID_SOCKET);
    if (listener != INVALID_SOCKET) CloseSocket(listener);
    if (accept_thread_.joinable()) accept_thread_.join();
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    Wake();
    if (read_thread_.joinable()) read_thread_.join();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
    absl::MutexLock lock(&mu_);
    for (const Connection& conn : admitted_) CloseSocket(conn.fd);
    for (const Connection& conn : ready_) CloseSocket(conn.fd);
    admitted_.clear();
    ready_.clear();
    if (wake_fd_ >= 0) close(wake_fd_);
    wake_fd_ = -1;
  }

 private:
  // Called by httplib (InlineQueue) on its accept thread with each accepted socket.
  bool process_and_close_socket(socket_t sock) override {
    fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
    fcntl(sock, F_SETFD, FD_CLOEXEC);  // accept() does not: replicas must not inherit it
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Admit(Connection{sock, "", 0});
    return true;
  }

  // Hands a connection (new, or kept alive after a response) to the reader thread.
  void Admit(Connection conn) {
    const int fd = conn.fd;
    bool taken = false;
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_) {
        admitted_.push_back(std::move(conn));
        taken = true;
      }
    }
    if (!taken) {
      CloseSocket(fd);
      return;
    }
    Wake();
  }

  void Wake() {
    const uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
  }

  // A complete request head: to a worker, or refused when too many wait already.
  void Dispatch(Connection conn) {
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_ && ready_.size() < static_cast<size_t>(options_.max_queued_requests)) {
        ready_.push_back(std::move(conn));
        return;
      }
    }
    RefuseAndClose(conn.fd, "503 Service Unavailable");
  }

  // The one thread that waits on connections whose request has not fully arrived.
  void ReadLoop() {
    struct Waiting {
      Connection conn;
      absl::Time deadline;
      bool started = false;  // a byte of the request arrived: request_timeout, not idle
    };
    // By admission order: the first entry is the connection held longest, the one a new
    // connection past max_connections closes.
    std::map<uint64_t, Waiting> waiting;
    uint64_t next = 0;
    std::vector<pollfd> fds;
    std::vector<uint64_t> keys;
    char buf[4096];
    // Moves a connection on once its head is complete or too large; false while it waits.
    auto progressed = [&](Waiting& w) {
      switch (HeadState(w.conn.pending, options_.max_request_head_bytes)) {
        case Head::kIncomplete:
          return false;
        case Head::kComplete:
          Dispatch(std::move(w.conn));
          return true;
        case Head::kTooLarge:
          RefuseAndClose(w.conn.fd, "431 Request Header Fields Too Large");
          return true;
      }
      return false;
    };
    for (;;) {
      std::vector<Connection> admitted;
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) break;
        admitted.swap(admitted_);
      }
      absl::Time now = options_.clock->Now();
      for (Connection& conn : admitted) {
        if (waiting.size() >= static_cast<size_t>(options_.max_connections)) {
          CloseSocket(waiting.begin()->second.conn.fd);
          waiting.erase(waiting.begin());
        }
        Waiting w;
        w.started = !conn.pending.empty();
        w.deadline = now + (w.started ? options_.request_timeout : options_.idle_timeout);
        w.conn = std::move(conn);
        if (!progressed(w)) waiting.emplace(next++, std::move(w));
      }

      fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
      keys.clear();
      absl::Time first_deadline = absl::InfiniteFuture();
      for (const auto& [key, w] : waiting) {
        fds.push_back(pollfd{w.conn.fd, POLLIN, 0});
        keys.push_back(key);
        first_deadline = std::min(first_deadline, w.deadline);
      }
      const int timeout = waiting.empty() ? -1 : PollMillis(first_deadline - now);
      if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
        // Only a bad descriptor gets here; dropping what waits beats spinning on it.
        for (const auto& [key, w] : waiting) CloseSocket(w.conn.fd);
        waiting.clear();
        continue;
      }
      if (fds[0].revents != 0) {
        uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof(count));
      }

      now = options_.clock->Now();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = waiting.find(keys[i - 1]);
        Waiting& w = it->second;
        bool closed = false;
        // Up to just past the bound: HeadState refuses more than that.
        while (w.conn.pending.size() <= options_.max_request_head_bytes) {
          const ssize_t n = recv(w.conn.fd, buf, sizeof(buf), MSG_DONTWAIT);
          if (n > 0) {
            w.conn.pending.append(buf, static_cast<size_t>(n));
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
          break;
        }
        if (!w.started && !w.conn.pending.empty()) {
          w.started = true;
          w.deadline = now + options_.request_timeout;
        }
        // A client that sent its whole request and then half-closed still gets its answer.
        if (progressed(w)) {
          waiting.erase(it);
        } else if (closed) {
          CloseSocket(w.conn.fd);
          waiting.erase(it);
        }
      }
      for (auto it = waiting.begin(); it != waiting.end();) {
        if (it->second.deadline <= now) {
          CloseSocket(it->second.conn.fd);
          it = waiting.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (const auto& [key, w] : waiting) CloseSocket(w.conn.fd);
  }

  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !ready_.empty();
  }

  void WorkLoop() {
    for (;;) {
      Connection conn;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &Impl::HasWorkOrStopping));
        if (stopping_) return;
        conn = std::move(ready_.front());
        ready_.pop_front();
      }
      Answer(std::move(conn));
    }
  }

  void Answer(Connection conn) {
    const bool last = conn.served + 1 >= options_.max_requests_per_connection;
    bool reusable = true;
    bool client_closes = false;
    ConnectionStream stream(&conn, options_.clock->Now() + options_.request_timeout,
                            options_.clock);
    const bool written =
        process_request(stream, last, client_closes, [&reusable](httplib::Request& req) {
          if (req.method != "GET" && req.method != "HEAD") {
            // Its body stays unread: say so in the response, and close.
            reusable = false;
            req.headers.erase("Connection");
            req.set_header("Connection", "close");
          }
        });
    stream.Consume();
    ++conn.served;
    if (!written || last || client_closes || !reusable) {
      CloseSocket(conn.fd);
      return;
    }
    Admit(std::move(conn));
  }

  const HttpServerOptions options_;
  int wake_fd_ = -1;  // eventfd: wakes ReadLoop's poll for new connections and at shutdown
  std::thread accept_thread_;
  std::thread read_thread_;
  std::vector<std::thread> workers_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Connection> admitted_ ABSL_GUARDED_BY(mu_);  // for ReadLoop to take
  std::deque<Connection> ready_ ABSL_GUARDED_BY(mu_);      // complete heads for the workers
};

absl::Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\" is not host:port"));
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  if (!absl::SimpleAtoi(address.substr(colon + 1), port) || *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("\"", address, "\": bad port"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                              std::function<bool()> ready,
                                                              const metrics::Registry* registry,
                                                              HttpServerOptions options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(listen, &host, &port); !s.ok()) return s;
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  auto impl = std::make_unique<Impl>(options);
  impl->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  impl->Get("/readyz", [ready](const httplib::Request&, httplib::Response& res) {
    if (ready && ready()) {
      res.set_content("ready\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content("not ready\n", "text/plain");
    }
  });
  if (registry != nullptr) {
    impl->Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
      res.set_content(registry->Render(), "text/plain; version=0.0.4; charset=utf-8");
    });
  }
  if (port == 0) {
    port = impl->bind_to_any_port(host);
    if (port < 0) port = 0;
  } else if (!impl->bind_to_port(host, port)) {
    port = 0;
  }
  if (port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  }
  if (absl::Status s = impl->Run(); !s.ok()) return s;
  std::unique_ptr<HttpServer> http(new HttpServer());
  http->impl_ = std::move(impl);
  http->port_ = port;
  return http;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (impl_ != nullptr) impl_->Shutdown();
}

}  // namespace coach::server
