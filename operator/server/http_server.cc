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
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "operator/server/body_budget.h"
#include "operator/server/connection_transport.h"
#include "operator/server/request_framing.h"

namespace coach::server {
namespace {

constexpr int kListenBacklog = 1024;  // the kernel caps it at net.core.somaxconn

void CloseSocket(int fd) {
  shutdown(fd, SHUT_RDWR);
  close(fd);
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
// (the next request's head, once complete; a pipelined one's too). Destroying it closes it.
struct Connection {
  std::unique_ptr<ConnectionTransport> transport;
  std::string pending;
  int served = 0;  // requests answered on it
  // Set by the reader thread for the request it hands to a worker: the bytes of `pending`
  // that are its head and body, and whether its body was left unread (then the connection
  // closes after the answer: what follows in it is no request).
  size_t request_size = 0;
  bool body_unread = false;
  // The body's share of HttpServerOptions::max_buffered_body_bytes while the request is held.
  BodyBudget::Reservation body;
};

// Best effort: the socket is nonblocking and the client may be gone.
void RefuseAndClose(Connection conn, absl::string_view status) {
  const std::string response =
      absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  (void)conn.transport->Write(response.data(), response.size());
}

// One request as httplib reads it and its response as httplib writes it: head and body come
// from what the reader thread already received, never from the socket, and the response is
// written within `deadline`, so that a worker is never held longer by a slow client.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(Connection* conn, absl::Time deadline, Clock* clock)
      : conn_(conn), deadline_(deadline), clock_(clock) {}

  bool is_readable() const override { return true; }  // a read never waits
  bool is_writable() const override { return Wait(POLLOUT); }

  // Past the request, the end of the stream: a request without a Content-Length then has
  // no body, and the next pipelined request is not taken for this one's.
  ssize_t read(char* ptr, size_t size) override {
    const size_t end = std::min(conn_->request_size, conn_->pending.size());
    if (offset_ >= end) return 0;
    const size_t n = std::min(size, end - offset_);
    std::memcpy(ptr, conn_->pending.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (size == 0) return 0;
    for (;;) {
      const ssize_t n = conn_->transport->Write(ptr, size);
      if (n > 0) return n;
      if (n == 0 || !Wait(conn_->transport->wanted())) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    SocketAddress(conn_->transport->fd(), /*peer=*/true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    SocketAddress(conn_->transport->fd(), /*peer=*/false, ip, port);
  }
  socket_t socket() const override { return conn_->transport->fd(); }

  // Drops the request from the connection's pending bytes, read by httplib or not.
  void Consume() {
    conn_->pending.erase(0, std::min(conn_->request_size, conn_->pending.size()));
    conn_->request_size = 0;
    offset_ = 0;
  }

 private:
  // Whether the socket got ready for `events` before the deadline; a hang-up or an error
  // counts as ready, so that the next call reports it.
  bool Wait(short events) const {
    pollfd p{conn_->transport->fd(), events, 0};
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
  if (o.tls == nullptr && !o.tls_client_ca_pem.empty()) {
    return absl::InvalidArgumentError("HttpServerOptions: a client CA without TLS");
  }
  return absl::OkStatus();
}

constexpr absl::string_view kMethods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};

// Path -> method -> handler.
using RouteTable = std::map<std::string, std::map<std::string, HttpHandler>>;

absl::StatusOr<RouteTable> TableOf(Routes routes) {
  RouteTable table;
  for (Route& route : routes) {
    if (std::find(std::begin(kMethods), std::end(kMethods), route.method) == std::end(kMethods)) {
      return absl::InvalidArgumentError(
          absl::StrCat("route ", route.path, ": method \"", route.method, "\" is not served"));
    }
    if (route.path.empty() || route.path.front() != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("route \"", route.path, "\": a path begins with '/'"));
    }
    if (!route.handler) {
      return absl::InvalidArgumentError(absl::StrCat("route ", route.path, ": no handler"));
    }
    if (!table[route.path].emplace(route.method, std::move(route.handler)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("route ", route.method, " ", route.path, ": given twice"));
    }
  }
  return table;
}

std::string AllowOf(const std::map<std::string, HttpHandler>& methods) {
  std::string allow;
  for (const auto& [method, handler] : methods) {
    absl::StrAppend(&allow, allow.empty() ? "" : ", ", method);
    if (method == "GET") absl::StrAppend(&allow, ", HEAD");
  }
  return allow;
}

// httplib records the peer's and its own address among the request headers.
bool IsAddressPseudoHeader(const std::string& name) {
  return name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
         name == "LOCAL_PORT";
}

}  // namespace

std::string HttpRequest::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

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
// connections: admission, the reader thread's waiting, the workers and every deadline.
class HttpServer::Impl : public httplib::Server {
 public:
  Impl(const HttpServerOptions& options, RouteTable routes, std::unique_ptr<TlsServerContext> tls)
      : options_(options), tls_(std::move(tls)), routes_(std::move(routes)) {
    new_task_queue = [] { return new InlineQueue(); };
    // Only what httplib itself still does with them: the Keep-Alive header it advertises and
    // the timeouts it sets on accepted sockets, which this class reads without blocking.
    set_keep_alive_max_count(static_cast<size_t>(options.max_requests_per_connection));
    set_keep_alive_timeout(absl::ToInt64Seconds(options.idle_timeout));
    set_read_timeout(absl::ToChronoSeconds(options.request_timeout));
    set_write_timeout(absl::ToChronoSeconds(options.request_timeout));
    // A body past the bound is left unread by the reader thread; httplib then answers 413
    // where a route would read it.
    set_payload_max_length(options.max_body_bytes);
    // Before httplib reads a body: an unrouted request is answered without it.
    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const auto path = routes_.find(req.path);
      if (path == routes_.end()) {
        res.status = 404;
        return HandlerResponse::Handled;
      }
      if (path->second.count(RouteMethod(req.method)) == 0) {
        res.status = 405;
        res.set_header("Allow", AllowOf(path->second));
        return HandlerResponse::Handled;
      }
      return HandlerResponse::Unhandled;
    });
    // Every routed request reaches one of these (the pre-routing handler answered the
    // others), its body read.
    auto handle = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
    Get(".*", handle);
    Post(".*", handle);
    Put(".*", handle);
    Patch(".*", handle);
    Delete(".*", handle);
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
    admitted_.clear();  // closes them
    ready_.clear();
    if (wake_fd_ >= 0) close(wake_fd_);
    wake_fd_ = -1;
  }

 private:
  static std::string RouteMethod(const std::string& method) {
    return method == "HEAD" ? "GET" : method;
  }

  void Handle(const httplib::Request& req, httplib::Response& res) const {
    const HttpHandler& handler = routes_.at(req.path).at(RouteMethod(req.method));
    HttpRequest request;
    request.method = req.method;
    request.path = req.path;
    request.params = std::multimap<std::string, std::string>(req.params.begin(), req.params.end());
    for (const auto& [name, value] : req.headers) {
      if (!IsAddressPseudoHeader(name)) request.headers.emplace_back(name, value);
    }
    request.body = req.body;
    request.remote_addr = req.remote_addr;
    HttpResponse response;
    try {
      response = handler(request);
    } catch (...) {
      // Not httplib's own answer to an exception, which names it in a response header.
      response = HttpResponse{500, "text/plain", "internal error\n", {}};
    }
    res.status = response.status;
    for (const auto& [name, value] : response.headers) res.set_header(name.c_str(), value);
    res.set_content(std::move(response.body), response.content_type.c_str());
  }

  // Called by httplib (InlineQueue) on its accept thread with each accepted socket.
  bool process_and_close_socket(socket_t sock) override {
    fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
    fcntl(sock, F_SETFD, FD_CLOEXEC);  // accept() does not: replicas must not inherit it
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Connection conn;
    conn.transport = ConnectionTransport::Accept(sock, tls_.get());
    if (conn.transport != nullptr) Admit(std::move(conn));
    return true;
  }

  // Hands a connection (new, or kept alive after a response) to the reader thread.
  void Admit(Connection conn) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;  // closes it
      admitted_.push_back(std::move(conn));
    }
    Wake();
  }

  void Wake() {
    const uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof(one));
  }

  // A complete request: to a worker, or refused when too many wait already.
  void Dispatch(Connection conn) {
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_ && ready_.size() < static_cast<size_t>(options_.max_queued_requests)) {
        ready_.push_back(std::move(conn));
        return;
      }
    }
    RefuseAndClose(std::move(conn), "503 Service Unavailable");
  }

  // A connection the reader thread waits on: for its TLS handshake, then for its request.
  struct Waiting {
    Connection conn;
    absl::Time deadline;
    bool started = false;  // a byte of the handshake or request arrived: request_timeout
    short events = POLLIN;
    std::optional<RequestFrame> frame;  // once the head is complete
    bool continued = false;             // "100 Continue" sent
  };

  // Moves a connection on once its request is complete or refused; false while it waits.
  bool Progressed(Waiting& w) {
    if (!w.frame.has_value()) {
      RequestFrame frame =
          FrameRequest(w.conn.pending, options_.max_request_head_bytes, options_.max_body_bytes);
      switch (frame.kind) {
        case RequestFrame::Kind::kIncomplete:
          return false;
        case RequestFrame::Kind::kRefused:
          RefuseAndClose(std::move(w.conn), frame.refusal);
          return true;
        case RequestFrame::Kind::kFramed:
          if (frame.body_size > 0 && !bodies_.Reserve(frame.body_size, &w.conn.body)) {
            RefuseAndClose(std::move(w.conn), "503 Service Unavailable");
            return true;
          }
          w.frame = std::move(frame);
          break;
      }
    }
    if (w.conn.pending.size() >= w.frame->request_size()) {
      w.conn.request_size = w.frame->request_size();
      w.conn.body_unread = w.frame->body_unread;
      Dispatch(std::move(w.conn));
      return true;
    }
    if (w.frame->expects_continue && !w.continued) {
      // The client sends its body only after this (or after a timeout of its own).
      w.continued = true;
      constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      if (w.conn.transport->Write(kContinue.data(), kContinue.size()) !=
          static_cast<ssize_t>(kContinue.size())) {
        w.conn.transport.reset();  // a client that does not even read 25 bytes
        return true;
      }
    }
    return false;
  }

  // Handshakes and reads what a connection has for us; true once it left the waiting set
  // (handed on, refused or closed).
  bool Serviced(Waiting& w, absl::Time now, char* buf, size_t buf_size) {
    ConnectionTransport& transport = *w.conn.transport;
    if (!transport.handshake_done()) {
      if (!w.started) {
        w.started = true;
        w.deadline = now + options_.request_timeout;
      }
      switch (transport.Advance()) {
        case ConnectionTransport::Handshake::kFailed:
          w.conn.transport.reset();
          return true;
        case ConnectionTransport::Handshake::kWaiting:
          w.events = transport.wanted();
          return false;
        case ConnectionTransport::Handshake::kDone:
          w.events = POLLIN;
          break;
      }
    }
    for (;;) {
      enum class Stop { kBound, kBlocked, kClosed } stop = Stop::kBound;
      // Up to just past the bound: FrameRequest refuses a head longer than that, and a
      // request's end is known once its head is.
      const size_t bound =
          w.frame.has_value() ? w.frame->request_size() : options_.max_request_head_bytes;
      while (w.conn.pending.size() <= bound) {
        const ssize_t n = transport.Read(buf, buf_size);
        if (n > 0) {
          w.conn.pending.append(buf, static_cast<size_t>(n));
          continue;
        }
        stop = n < 0 ? Stop::kBlocked : Stop::kClosed;
        if (n < 0) w.events = transport.wanted();
        break;
      }
      if (!w.started && !w.conn.pending.empty()) {
        w.started = true;
        w.deadline = now + options_.request_timeout;
      }
      // A client that sent its whole request and then half-closed still gets its answer.
      if (Progressed(w)) return true;
      if (stop == Stop::kClosed) {
        w.conn.transport.reset();
        return true;
      }
      if (stop == Stop::kBlocked) return false;
      // Stopped at the head's bound and the head completed: the body may be here already.
    }
  }

  // The one thread that waits on connections whose request has not fully arrived.
  void ReadLoop() {
    // By admission order: the first entry is the connection held longest, the one a new
    // connection past max_connections closes.
    std::map<uint64_t, Waiting> waiting;
    uint64_t next = 0;
    std::vector<pollfd> fds;
    std::vector<uint64_t> keys;
    char buf[16 * 1024];  // a whole TLS record
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
          waiting.erase(waiting.begin());  // closes it
        }
        Waiting w;
        w.started = !conn.pending.empty();
        w.deadline = now + (w.started ? options_.request_timeout : options_.idle_timeout);
        w.conn = std::move(conn);
        if (!Progressed(w)) waiting.emplace(next++, std::move(w));
      }

      fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
      keys.clear();
      absl::Time first_deadline = absl::InfiniteFuture();
      for (const auto& [key, w] : waiting) {
        // Decrypted bytes a TLS read left behind (it stopped at a request's end): poll()
        // would not report them, so do not wait.
        if (w.conn.transport->HasBuffered()) first_deadline = absl::InfinitePast();
        fds.push_back(pollfd{w.conn.transport->fd(), w.events, 0});
        keys.push_back(key);
        first_deadline = std::min(first_deadline, w.deadline);
      }
      const int timeout = waiting.empty() ? -1 : PollMillis(first_deadline - now);
      if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
        // Only a bad descriptor gets here; dropping what waits beats spinning on it.
        waiting.clear();
        continue;
      }
      if (fds[0].revents != 0) {
        uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof(count));
      }

      now = options_.clock->Now();
      for (size_t i = 1; i < fds.size(); ++i) {
        auto it = waiting.find(keys[i - 1]);
        if (fds[i].revents == 0 && !it->second.conn.transport->HasBuffered()) continue;
        if (Serviced(it->second, now, buf, sizeof(buf))) waiting.erase(it);
      }
      for (auto it = waiting.begin(); it != waiting.end();) {
        if (it->second.deadline <= now) {
          it = waiting.erase(it);  // closes it
        } else {
          ++it;
        }
      }
    }
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
    const bool body_unread = conn.body_unread;
    bool client_closes = false;
    ConnectionStream stream(&conn, options_.clock->Now() + options_.request_timeout,
                            options_.clock);
    const bool written =
        process_request(stream, last, client_closes, [body_unread](httplib::Request& req) {
          // The reader thread answered it when the body was still to come; httplib would
          // send a second, needless 100 Continue.
          req.headers.erase("Expect");
          if (body_unread) {
            // Say so in the response: the connection closes.
            req.headers.erase("Connection");
            req.set_header("Connection", "close");
          }
        });
    stream.Consume();
    conn.body.Release();
    ++conn.served;
    if (!written || last || client_closes || body_unread) return;  // closes it
    Admit(std::move(conn));
  }

  const HttpServerOptions options_;
  // Before every Connection member: a connection's reservation is given back to it.
  BodyBudget bodies_{options_.max_buffered_body_bytes};
  const std::unique_ptr<TlsServerContext> tls_;  // null: plain HTTP
  const RouteTable routes_;
  int wake_fd_ = -1;  // eventfd: wakes ReadLoop's poll for new connections and at shutdown
  std::thread accept_thread_;
  std::thread read_thread_;
  std::vector<std::thread> workers_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Connection> admitted_ ABSL_GUARDED_BY(mu_);  // for ReadLoop to take
  std::deque<Connection> ready_ ABSL_GUARDED_BY(mu_);      // complete requests for the workers
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

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Serve(const std::string& listen,
                                                              Routes routes,
                                                              HttpServerOptions options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(listen, &host, &port); !s.ok()) return s;
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<RouteTable> table = TableOf(std::move(routes));
  if (!table.ok()) return table.status();
  std::unique_ptr<TlsServerContext> tls;
  if (options.tls != nullptr) {
    absl::StatusOr<std::unique_ptr<TlsServerContext>> created =
        TlsServerContext::Create(options.tls, options.tls_client_ca_pem);
    if (!created.ok()) return created.status();
    tls = *std::move(created);
  }
  auto impl = std::make_unique<Impl>(options, *std::move(table), std::move(tls));
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

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                              std::function<bool()> ready,
                                                              const metrics::Registry* registry,
                                                              HttpServerOptions options) {
  Routes routes;
  routes.push_back({"GET", "/healthz", [](const HttpRequest&) {
                      return HttpResponse{200, "text/plain", "ok\n", {}};
                    }});
  routes.push_back({"GET", "/readyz", [ready](const HttpRequest&) {
                      return ready && ready() ? HttpResponse{200, "text/plain", "ready\n", {}}
                                              : HttpResponse{503, "text/plain", "not ready\n", {}};
                    }});
  if (registry != nullptr) {
    routes.push_back(
        {"GET", "/metrics", [registry](const HttpRequest&) {
           return HttpResponse{
               200, "text/plain; version=0.0.4; charset=utf-8", registry->Render(), {}};
         }});
  }
  return Serve(listen, std::move(routes), std::move(options));
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (impl_ != nullptr) impl_->Shutdown();
}

}  // namespace coach::server
