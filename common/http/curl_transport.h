#pragma once

// Transport over libcurl.
//
// Connection reuse: a pool of easy handles (each keeps its keep-alive connections between
// exchanges; curl_easy_reset does not drop them) and one share handle for DNS answers and TLS
// sessions across the pool. A handle whose exchange failed is dropped rather than pooled, so a
// broken connection is never reused. One transport may serve many clients and threads.
//
// TLS: the server is verified unless tls.insecure_skip_verify (tests, or a kubeconfig that says
// so); CA and client certificate/key come as PEM bytes (which win) or as files. HTTP/2 is
// negotiated over TLS when `http2` is set and libcurl has it; plain http stays HTTP/1.1.
// Secrets in request headers are scrubbed from the transport's own copies after each exchange.

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/http/transport.h"

namespace coach::http {

struct TlsOptions {
  bool insecure_skip_verify = false;  // no server verification at all
  std::string ca_pem;                 // CA bundle to verify the server with (wins over ca_file)
  std::string ca_file;
  std::string client_cert_pem;  // client certificate (mTLS), wins over client_cert_file
  std::string client_cert_file;
  std::string client_key_pem;   // its key, wins over client_key_file (which may name the
  std::string client_key_file;  // same file as client_cert_file: a PEM holding both)
};

struct CurlTransportOptions {
  TlsOptions tls;
  absl::Duration connect_timeout = absl::Seconds(10);
  std::string user_agent = "coach";
  bool http2 = true;
  // Bodies buffered beyond this many bytes are cut (the rest is read and dropped); 0: no limit.
  size_t max_body_bytes = 0;
  // Idle handles kept for reuse; more are closed when released.
  int max_idle_handles = 32;
};

class CurlTransport : public Transport {
 public:
  // ResourceExhausted when libcurl cannot make its share handle. Certificate files are not
  // read here: an unreadable one fails each exchange with Failure::kTls.
  static absl::StatusOr<std::unique_ptr<CurlTransport>> Create(CurlTransportOptions options = {});
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  Result Send(const Request& request, const SendOptions& options = {}) override;

  const CurlTransportOptions& options() const { return options_; }

 private:
  struct Pool;
  CurlTransport(CurlTransportOptions options, std::unique_ptr<Pool> pool);

  const CurlTransportOptions options_;
  std::unique_ptr<Pool> pool_;
};

}  // namespace coach::http
