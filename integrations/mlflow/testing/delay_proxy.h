#pragma once

// DelayProxy: a loopback HTTP proxy in front of an MLflow server that holds every request for
// a settable delay before forwarding it (a slow tracking server, for fault-injection tests), and
// counts the requests that carried credentials.
// Connection failures upstream answer 502. Thread-safe.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace httplib {
class Server;
}

namespace coach::mlflow::testing {

class DelayProxy {
 public:
  // `upstream_uri`: "http://127.0.0.1:PORT".
  explicit DelayProxy(const std::string& upstream_uri);
  ~DelayProxy();
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  void SetDelay(absl::Duration delay);
  std::string uri() const;
  int requests() const { return requests_.load(); }
  // Requests that carried an Authorization header (credentials the caller sent).
  int authorized_requests() const { return authorized_requests_.load(); }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string upstream_host_;
  int upstream_port_ = 0;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> authorized_requests_{0};
  mutable absl::Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::mlflow::testing
