#pragma once

// The operator's HTTP endpoints (cpp-httplib parses and routes): GET /healthz (the process
// serves), GET /readyz (200 once `ready` says so, 503 otherwise) and, given a registry,
// GET /metrics (Prometheus text). Plain HTTP: it carries no secrets and no job data; bind it
// to loopback or a cluster-internal address.
//
// Whoever can reach the port cannot keep others from being answered: a connection costs a
// file descriptor, never a thread, until its whole request head has arrived. One thread waits
// on every open connection; `workers` threads answer complete requests only. So idle
// connections, half-open ones and clients that trickle their request (slowloris) wait beside
// the others, each dropped at its own deadline, and the oldest make room for new ones.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/metrics/registry.h"

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
  // Requests answered on one connection before the server closes it.
  int max_requests_per_connection = 100;
  // Threads that answer complete requests, and the complete requests that may wait for one;
  // past that a request is answered 503 and its connection closed.
  int workers = 2;
  int max_queued_requests = 64;
  // Reads the deadlines above.
  Clock* clock = Clock::Real();

  // A listener for the kubelet's probes alone: few connections, one worker.
  static HttpServerOptions Probe();
};

class HttpServer {
 public:
  // Serves /healthz, /readyz and, when `registry` is not null, /metrics on `listen`,
  // "host:port" (port 0: a free one). `ready` is called from the server's threads.
  // Errors: InvalidArgument (bad address or options), Unavailable (cannot bind).
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
