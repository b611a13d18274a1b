#pragma once

// The operator's HTTP endpoint (cpp-httplib): GET /healthz (the process serves),
// GET /readyz (200 once `ready` says so, 503 otherwise), GET /metrics (Prometheus text).
// Plain HTTP: it carries no secrets and no job data; bind it to loopback or a
// cluster-internal address.

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "operator/metrics/registry.h"

namespace httplib {
class Server;
}

namespace coach::server {

class HttpServer {
 public:
  // `listen` is "host:port" (port 0: a free one). Errors: InvalidArgument (bad address),
  // Unavailable (cannot bind).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& listen,
                                                           std::function<bool()> ready,
                                                           const metrics::Registry* registry);
  ~HttpServer();  // Stop()

  int port() const { return port_; }
  void Stop();

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Splits "host:port" ("[::1]:80" too). Errors: InvalidArgument.
absl::Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace coach::server
