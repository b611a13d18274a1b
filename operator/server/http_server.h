#pragma once

// The operator's HTTP endpoints (cpp-httplib parses requests and writes responses), hardened
// against clients that cannot be trusted to be quick: Start serves GET /healthz (the
// process serves), GET /readyz (200 once `ready` says so, 503 otherwise) and, given a
// registry, GET /metrics (Prometheus text), plain HTTP, for loopback or a cluster-internal
// address; Serve answers the routes its caller gives, with request bodies and, given a
// serving certificate, HTTPS (an admission webhook).
//
// Whoever can reach the port cannot keep others from being answered: a connection costs a
// file descriptor, never a thread, until its whole request (TLS handshake, head and body)
// has arrived. One thread waits on every open connection; `workers` threads answer complete
// requests only. So idle connections, half-open ones and clients that trickle their
// handshake or request (slowloris) wait beside the others, each dropped at its own
// deadline, and the oldest make room for new ones.
//
// Answers the server gives by itself, closing the connection: 400 (malformed framing: bare
// CR or LF, folded or blank-containing header names, conflicting Content-Lengths), 411 (a
// Transfer-Encoding: bodies need a Content-Length), 413 (a body past max_body_bytes for a
// route that takes one; the body is never read), 415 (a Content-Encoding on a body), 431 (a
// head past max_request_head_bytes), 503 (the worker queue is full). And, keeping the
// connection unless the body went unread: 404 (no route has the path), 405 with Allow (the
// path is routed, the method not).

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/metrics/registry.h"
#include "operator/server/serving_certificate.h"

namespace coach::server {

struct HttpServerOptions {
  // Connections held while their request arrives, idle ones included. A new connection past
  // this closes the one held longest: a crowd of idle or slow clients then only cycles
  // through its own connections, while a client that sends its request at once is answered.
  int max_connections = 256;
  // How long a connection may stay silent before a request begins (after accept, and
  // between the requests of a kept-alive connection).
  absl::Duration idle_timeout = absl::Seconds(5);
  // How long a request head may take to arrive once it began, and the response to be
  // written: a client that trickles bytes or never reads is dropped after it.
  absl::Duration request_timeout = absl::Seconds(3);
  // A larger request head is answered 431 and its connection closed.
  size_t max_request_head_bytes = 8 * 1024;
  // The largest request body read (by Content-Length). A request announcing more is
  // answered without its body being read (413 where a route would take the body) and its
  // connection closed. 0: no bodies. A connection may hold max_request_head_bytes +
  // max_body_bytes of memory while its request arrives.
  size_t max_body_bytes = 0;
  // The bodies held at once across all connections, while they arrive and until they are
  // answered: a request whose body would pass it is answered 503 before the body is read and
  // its connection closed. 0: no bound but max_connections x max_body_bytes.
  size_t max_buffered_body_bytes = 0;
  // Requests answered on one connection before the server closes it.
  int max_requests_per_connection = 100;
  // Threads that answer complete requests, and the complete requests that may wait for one;
  // past that a request is answered 503 and its connection closed.
  int workers = 2;
  int max_queued_requests = 64;
  // Reads the deadlines above.
  Clock* clock = Clock::Real();

  // Not null: every connection is TLS (1.2 or later; ALPN "http/1.1", a client that offers
  // only other protocols is refused), and each handshake presents the certificate this
  // holds at that moment, so a Set on it rotates the certificate without a restart. The
  // handshake counts against request_timeout from its first byte, as a request head does;
  // a client that is not TLS or fails its handshake is closed without an answer.
  std::shared_ptr<ServingCertificate> tls;
  // With `tls`, not empty: PEM CA certificates; a client must present a certificate one of
  // them signed (mutual TLS), or its handshake fails.
  std::string tls_client_ca_pem;

  // A listener for the kubelet's probes alone: few connections, one worker.
  static HttpServerOptions Probe();
};

// A request as a route sees it: head and body complete.
struct HttpRequest {
  std::string method;  // as sent; "HEAD" reaches the GET route (its body is not sent)
  std::string path;    // without the query, percent-decoded
  std::multimap<std::string, std::string> params;  // the query's, decoded
  // Names and values as sent, ordered by name without case.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string remote_addr;

  // The first value of header `name`, compared without case; empty when absent.
  std::string Header(absl::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beside Content-Type
};

// Called on a worker thread, possibly on several at once. An exception becomes a 500.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct Route {
  std::string method;  // GET (which HEAD reaches too), POST, PUT, PATCH or DELETE
  std::string path;    // matched exactly; begins with '/'
  HttpHandler handler;
};
using Routes = std::vector<Route>;

class HttpServer {
 public:
  // Serves `routes` on `listen`, "host:port" (port 0: a free one).
  // Errors: InvalidArgument (bad address, options or routes: an unknown method, a path
  // without its leading '/', a null handler, a (method, path) twice; a client CA without a
  // serving certificate or holding no certificate), FailedPrecondition (`tls` was never
  // Set), Unavailable (cannot bind), Internal (OpenSSL or the kernel refused a setting).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Serve(const std::string& listen, Routes routes,
                                                           HttpServerOptions options);

  // Serves /healthz, /readyz and, when `registry` is not null, /metrics on `listen`,
  // "host:port" (port 0: a free one), GET and HEAD only. `ready` is called from the
  // server's threads. Errors: those of Serve.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& listen,
                                                           std::function<bool()> ready,
                                                           const metrics::Registry* registry,
                                                           HttpServerOptions options = {});
  ~HttpServer();  // Stop()

  int port() const { return port_; }
  // Closes the listener and every connection; a response being written gets at most
  // `request_timeout` to finish. Idempotent.
  void Stop();

 private:
  class Impl;
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Splits "host:port" ("[::1]:80" too). Errors: InvalidArgument.
absl::Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace coach::server
