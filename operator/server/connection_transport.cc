#include "operator/server/connection_transport.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"

namespace coach::server {
namespace {

// OpenSSL's socket BIO writes with write(2): a peer that has gone would raise SIGPIPE and
// end the process. This one sends with MSG_NOSIGNAL; the descriptor stays the transport's.
int SocketOf(BIO* bio) { return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio))); }

int BioWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n =
        send(SocketOf(bio), data, static_cast<size_t>(size), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
    return -1;
  }
}

int BioRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n = recv(SocketOf(bio), data, static_cast<size_t>(size), MSG_DONTWAIT);
    if (n == 0) BIO_set_flags(bio, BIO_FLAGS_IN_EOF);  // read by BIO_CTRL_EOF below
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
    return -1;
  }
}

long BioCtrl(BIO* bio, int cmd, long, void*) {  // NOLINT(runtime/int): OpenSSL's signature
  switch (cmd) {
    case BIO_CTRL_FLUSH:  // nothing is buffered here; OpenSSL fails a handshake on 0
      return 1;
    case BIO_CTRL_EOF:  // tells a peer that vanished from one that closed TLS properly
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0;
    default:
      return 0;
  }
}

int BioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* SocketMethod() {
  static const BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "coach socket");
    if (m == nullptr) return static_cast<BIO_METHOD*>(nullptr);
    BIO_meth_set_write(m, BioWrite);
    BIO_meth_set_read(m, BioRead);
    BIO_meth_set_ctrl(m, BioCtrl);
    BIO_meth_set_create(m, BioCreate);
    return m;
  }();
  return method;
}

int UseServingCertificate(SSL* ssl, void* certificate) {
  return static_cast<const ServingCertificate*>(certificate)->UseFor(ssl) ? 1 : 0;
}

// The Kubernetes API server's client offers h2 and http/1.1; this server speaks only the
// latter, and says so rather than let a client assume h2.
int SelectHttp11(SSL*, const unsigned char** out, unsigned char* out_size,
                 const unsigned char* offered, unsigned int offered_size, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_size, kHttp11, sizeof(kHttp11), offered, offered_size) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

void CloseSocket(int fd) {
  shutdown(fd, SHUT_RDWR);
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsServerContext>> TlsServerContext::Create(
    std::shared_ptr<ServingCertificate> certificate, const std::string& client_ca_pem) {
  if (certificate == nullptr) return absl::InvalidArgumentError("TLS: no serving certificate");
  if (!certificate->has_certificate()) {
    return absl::FailedPreconditionError("TLS: the serving certificate was never set");
  }
  std::unique_ptr<TlsServerContext> tls(new TlsServerContext());
  tls->certificate_ = std::move(certificate);
  tls->ctx_ = SSL_CTX_new(TLS_server_method());
  SSL_CTX* ctx = tls->ctx_;
  static const unsigned char kSessionContext[] = "coach-http";
  if (ctx == nullptr || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_num_tickets(ctx, 0) != 1 ||
      SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1) != 1) {
    ERR_clear_error();
    return absl::InternalError("TLS: OpenSSL refused the server context");
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  // Partial writes, like send(2)'s; a write retried after WANT_WRITE may come from another
  // buffer address (httplib's copy).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_cert_cb(ctx, UseServingCertificate, tls->certificate_.get());
  SSL_CTX_set_alpn_select_cb(ctx, SelectHttp11, nullptr);
  if (!client_ca_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(client_ca_pem.data(), static_cast<int>(client_ca_pem.size()));
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    int loaded = 0;
    while (X509* ca =
               bio == nullptr ? nullptr : PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      // The names go in the certificate request: a client with several certificates picks
      // the one these signed.
      if (X509_STORE_add_cert(store, ca) == 1 && SSL_CTX_add_client_CA(ctx, ca) == 1) ++loaded;
      X509_free(ca);
    }
    BIO_free(bio);
    ERR_clear_error();  // the reader's "no more certificates"
    if (loaded == 0) return absl::InvalidArgumentError("client CA: no PEM certificate in it");
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return tls;
}

TlsServerContext::~TlsServerContext() { SSL_CTX_free(ctx_); }

std::unique_ptr<ConnectionTransport> ConnectionTransport::Accept(int fd,
                                                                 const TlsServerContext* tls) {
  if (tls == nullptr)
    return std::unique_ptr<ConnectionTransport>(new ConnectionTransport(fd, nullptr));
  SSL* ssl = SSL_new(tls->get());
  BIO* bio = SocketMethod() == nullptr ? nullptr : BIO_new(SocketMethod());
  if (ssl == nullptr || bio == nullptr) {
    SSL_free(ssl);
    BIO_free(bio);
    ERR_clear_error();
    CloseSocket(fd);
    return nullptr;
  }
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);  // the SSL owns the BIO now
  SSL_set_accept_state(ssl);
  return std::unique_ptr<ConnectionTransport>(new ConnectionTransport(fd, ssl));
}

ConnectionTransport::~ConnectionTransport() {
  if (ssl_ != nullptr) {
    // OpenSSL's error queue is per thread: a stale entry would make a later SSL_get_error on
    // another connection report a failure that is not its own. Hence every clear below.
    ERR_clear_error();
    if (!broken_ && SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    SSL_free(ssl_);
    ERR_clear_error();
  }
  CloseSocket(fd_);
}

ConnectionTransport::Handshake ConnectionTransport::Advance() {
  if (handshake_done_) return Handshake::kDone;
  if (broken_) return Handshake::kFailed;
  ERR_clear_error();
  const int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    handshake_done_ = true;
    return Handshake::kDone;
  }
  return TlsFailure(ret) < 0 ? Handshake::kWaiting : Handshake::kFailed;
}

ssize_t ConnectionTransport::Read(char* buf, size_t size) {
  if (ssl_ == nullptr) {
    for (;;) {
      const ssize_t n = recv(fd_, buf, size, MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return 0;
      wanted_ = POLLIN;
      return -1;
    }
  }
  if (broken_) return 0;
  ERR_clear_error();
  const int n = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  return n > 0 ? n : TlsFailure(n);
}

ssize_t ConnectionTransport::Write(const char* data, size_t size) {
  if (ssl_ == nullptr) {
    for (;;) {
      const ssize_t n = send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return 0;
      wanted_ = POLLOUT;
      return -1;
    }
  }
  if (broken_) return 0;
  ERR_clear_error();
  const int n = SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, INT_MAX)));
  return n > 0 ? n : TlsFailure(n);
}

bool ConnectionTransport::HasBuffered() const { return ssl_ != nullptr && SSL_has_pending(ssl_); }

ssize_t ConnectionTransport::TlsFailure(int ret) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      wanted_ = POLLIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      wanted_ = POLLOUT;
      return -1;
    case SSL_ERROR_ZERO_RETURN:  // the peer's close_notify: answering it is still allowed
      return 0;
    default:
      broken_ = true;
      ERR_clear_error();
      return 0;
  }
}

}  // namespace coach::server
