#include "integrations/mlflow/testing/delay_proxy.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"

namespace coach::mlflow::testing {

DelayProxy::DelayProxy(const std::string& upstream_uri) : server_(new httplib::Server) {
  const std::string hostport = upstream_uri.substr(upstream_uri.find("://") + 3);
  upstream_host_ = hostport.substr(0, hostport.find(':'));
  upstream_port_ = std::stoi(hostport.substr(hostport.find(':') + 1));
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    if (req.has_header("Authorization")) ++authorized_requests_;
    absl::Duration delay;
    {
      absl::MutexLock lock(&mu_);
      delay = delay_;
    }
    absl::SleepFor(delay);
    httplib::Client upstream(upstream_host_, upstream_port_);
    upstream.set_read_timeout(120, 0);
    const std::string type = req.get_header_value("Content-Type");
    httplib::Result r = req.method == "GET" ? upstream.Get(req.target.c_str())
                        : req.method == "PUT"
                            ? upstream.Put(req.target.c_str(), req.body, type.c_str())
                            : upstream.Post(req.target.c_str(), req.body, type.c_str());
    if (!r) {
      res.status = 502;
      return;
    }
    res.status = r->status;
    res.set_content(r->body, r->get_header_value("Content-Type").c_str());
  };
  server_->Get(".*", handler);
  server_->Post(".*", handler);
  server_->Put(".*", handler);
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

DelayProxy::~DelayProxy() {
  server_->stop();
  thread_.join();
}

void DelayProxy::SetDelay(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  delay_ = delay;
}

std::string DelayProxy::uri() const { return absl::StrCat("http://127.0.0.1:", port_); }

}  // namespace coach::mlflow::testing
