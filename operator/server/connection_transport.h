#pragma once

// The bytes of one accepted connection, plain or TLS, read and written without ever blocking:
// the HTTP server's reader thread waits on many of them with poll() and its workers write
// under a deadline. Each operation that cannot proceed says which poll() event it waits for
// (with TLS a read can wait to write and a write to read).

#include <poll.h>
#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "operator/server/serving_certificate.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX
struct ssl_st;      // OpenSSL's SSL

namespace coach::server {

// What a TLS listener negotiates: TLS 1.2 or later, ALPN "http/1.1" (and no other protocol:
// a client that offers only h2 is refused), full handshakes only (no session tickets or
// cache, so a rotated certificate or client CA is never bypassed by resumption), the
// certificate `certificate` holds at each handshake and, when `client_ca_pem` is not empty,
// a client certificate that one of its CA certificates signed.
class TlsServerContext {
 public:
  // Errors: InvalidArgument (`certificate` null; a client CA that holds no certificate),
  // FailedPrecondition (`certificate` was never Set), Internal (OpenSSL refused a setting).
  static absl::StatusOr<std::unique_ptr<TlsServerContext>> Create(
      std::shared_ptr<ServingCertificate> certificate, const std::string& client_ca_pem);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  ssl_ctx_st* get() const { return ctx_; }

 private:
  TlsServerContext() = default;
  ssl_ctx_st* ctx_ = nullptr;
  std::shared_ptr<ServingCertificate> certificate_;  // the certificate callback's argument
};

// One connection. Not thread-safe: one thread at a time uses it (the reader thread, then a
// worker, then the reader thread again).
class ConnectionTransport {
 public:
  // Takes `fd`, a nonblocking connected socket; `tls` null: plain. Null when OpenSSL cannot
  // make a connection object (out of memory); `fd` is then closed.
  static std::unique_ptr<ConnectionTransport> Accept(int fd, const TlsServerContext* tls);
  // A TLS close_notify, best effort and without waiting, then the socket closed.
  ~ConnectionTransport();
  ConnectionTransport(const ConnectionTransport&) = delete;
  ConnectionTransport& operator=(const ConnectionTransport&) = delete;

  enum class Handshake { kDone, kWaiting, kFailed };
  // Advances the TLS handshake as far as the bytes at hand allow. kWaiting: call again when
  // wanted() is ready. kFailed: close it (not TLS, no common protocol, no or a bad client
  // certificate). Plain connections: kDone.
  Handshake Advance();
  bool handshake_done() const { return handshake_done_; }

  // >0: bytes read or written; -1: it would block, retry when wanted() is ready; 0: the peer
  // closed, or the connection failed (a read); the connection failed (a write).
  ssize_t Read(char* buf, size_t size);
  ssize_t Write(const char* data, size_t size);
  // POLLIN or POLLOUT: what the last call that returned -1 (or kWaiting) waits for.
  short wanted() const { return wanted_; }
  // Bytes already received and decrypted but not read yet: poll() would not report them.
  bool HasBuffered() const;

  int fd() const { return fd_; }

 private:
  ConnectionTransport(int fd, ssl_st* ssl) : fd_(fd), ssl_(ssl), handshake_done_(ssl == nullptr) {}
  ssize_t TlsFailure(int ret);

  const int fd_;
  ssl_st* const ssl_;  // null: plain
  bool handshake_done_;
  bool broken_ = false;  // a fatal TLS error: OpenSSL forbids a close_notify after it
  short wanted_ = POLLIN;
};

}  // namespace coach::server
