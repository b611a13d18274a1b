// HTTPS as an admission webhook is served: real OpenSSL on both ends of loopback sockets,
// certificates made by the test. Bodies over TLS, keep-alive, ALPN, a certificate rotated
// while the server runs, mutual TLS, and clients that trickle their handshake, never begin
// it or speak plain HTTP to the TLS port.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "operator/server/http_server.h"
#include "operator/server/serving_certificate.h"
#include "operator/server/testing/loopback_socket.h"
#include "operator/server/testing/test_certificates.h"

namespace coach::server {
namespace {

using ::coach::server::testing::MakeTestCa;
using ::coach::server::testing::MakeTestLeaf;
using ::coach::server::testing::ReadUntilClosed;
using ::coach::server::testing::TestCertificate;

int Connect(int port) { return testing::ConnectLoopback(port); }
bool SendPlain(int fd, const std::string& bytes) { return testing::SendAll(fd, bytes); }

// The clients here write with OpenSSL's socket BIO (write(2)) to servers that may have closed.
const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

X509* ParseCert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

EVP_PKEY* ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

X509_STORE* StoreOf(const std::string& ca_pem) {
  X509_STORE* store = X509_STORE_new();
  X509* ca = ParseCert(ca_pem);
  X509_STORE_add_cert(store, ca);
  X509_free(ca);
  return store;
}

struct TlsClientOptions {
  const TestCertificate* client_certificate = nullptr;
  std::vector<std::string> alpn;  // offered protocols; none: no ALPN
  int max_version = 0;            // e.g. TLS1_2_VERSION; 0: the newest
};

// A TLS client on a blocking socket that gives up after a few seconds: the server is
// verified against `ca_pem` for IP 127.0.0.1.
class TlsClient {
 public:
  explicit TlsClient(int port, const std::string& ca_pem,
                     const TlsClientOptions& options = TlsClientOptions()) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_cert_store(ctx_, StoreOf(ca_pem));
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_max_proto_version(ctx_, options.max_version);
    if (options.client_certificate != nullptr) {
      X509* cert = ParseCert(options.client_certificate->cert_pem);
      EVP_PKEY* key = ParseKey(options.client_certificate->key_pem);
      SSL_CTX_use_certificate(ctx_, cert);
      SSL_CTX_use_PrivateKey(ctx_, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    }
    fd_ = Connect(port);
    if (fd_ < 0) return;
    const timeval three_seconds{3, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &three_seconds, sizeof(three_seconds));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &three_seconds, sizeof(three_seconds));
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    if (!options.alpn.empty()) {
      std::string wire;
      for (const std::string& protocol : options.alpn) {
        wire += static_cast<char>(protocol.size());
        wire += protocol;
      }
      SSL_set_alpn_protos(ssl_, reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned int>(wire.size()));
    }
    connected_ = SSL_connect(ssl_) == 1;
    ERR_clear_error();
  }
  ~TlsClient() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) close(fd_);
    SSL_CTX_free(ctx_);
    ERR_clear_error();
  }

  bool connected() const { return connected_; }

  std::string alpn() const {
    const unsigned char* selected = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(ssl_, &selected, &size);
    return std::string(reinterpret_cast<const char*>(selected), size);
  }

  bool Send(const std::string& bytes) {
    return connected_ && SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
                             static_cast<int>(bytes.size());
  }

  // One response, head and Content-Length body; what arrived when the connection ends first.
  std::string ReadResponse() {
    std::string out;
    size_t wanted = std::string::npos;
    while (connected_ && out.size() < wanted) {
      char buf[4096];
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n <= 0) {
        ERR_clear_error();
        break;
      }
      out.append(buf, static_cast<size_t>(n));
      const size_t head_end = out.find("\r\n\r\n");
      if (wanted == std::string::npos && head_end != std::string::npos) {
        const size_t at = out.find("Content-Length: ");
        size_t length = 0;
        if (at != std::string::npos && at < head_end) {
          const size_t end = out.find("\r\n", at);
          if (!absl::SimpleAtoi(out.substr(at + 16, end - at - 16), &length)) length = 0;
        }
        wanted = head_end + 4 + length;
      }
    }
    return out;
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool connected_ = false;
};

std::string Post(const std::string& path, const std::string& body) {
  return absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: localhost\r\nContent-Type: ",
                      "application/json\r\nContent-Length: ", body.size(), "\r\n\r\n", body);
}

// The first flight of an OpenSSL client: a ClientHello to trickle by hand.
std::string ClientHello() {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_connect(ssl);  // wants to read the ServerHello
  char* data = nullptr;
  const long size = BIO_get_mem_data(out, &data);  // NOLINT(runtime/int)
  std::string hello(data, static_cast<size_t>(size));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return hello;
}

// Two CAs, a server certificate from each, and a client CA with a client certificate.
struct Pki {
  Pki() {
    ca = *MakeTestCa("coach test CA one");
    server = *MakeTestLeaf(ca, "localhost");
    second_ca = *MakeTestCa("coach test CA two");
    second_server = *MakeTestLeaf(second_ca, "localhost");
    client_ca = *MakeTestCa("coach test client CA");
    client = *MakeTestLeaf(client_ca, "kube-apiserver");
  }
  TestCertificate ca, server, second_ca, second_server, client_ca, client;
};

// A webhook: POST /validate echoes its body's size and type; GET /healthz.
class HttpsServerTest : public ::testing::Test {
 protected:
  void Serve(HttpServerOptions options = {}) {
    auto certificate = ServingCertificate::Create(pki_.server.cert_pem, pki_.server.key_pem);
    ASSERT_TRUE(certificate.ok()) << certificate.status();
    certificate_ = *certificate;
    options.tls = certificate_;
    if (options.max_body_bytes == 0) options.max_body_bytes = 1 << 20;
    Routes routes = {
        {"POST", "/validate",
         [this](const HttpRequest& req) {
           ++calls_;
           return HttpResponse{200,
                               "application/json",
                               absl::StrCat("{\"type\":\"", req.Header("Content-Type"),
                                            "\",\"bytes\":", req.body.size(), "}"),
                               {}};
         }},
        {"GET", "/healthz",
         [](const HttpRequest&) {
           return HttpResponse{200, "text/plain", "ok\n", {}};
         }},
    };
    auto served = HttpServer::Serve("127.0.0.1:0", std::move(routes), options);
    ASSERT_TRUE(served.ok()) << served.status();
    server_ = *std::move(served);
  }

  // A fresh httplib client that verifies the server against `ca_pem`.
  std::unique_ptr<httplib::SSLClient> Client(const std::string& ca_pem,
                                             const TestCertificate* client_cert = nullptr) {
    std::unique_ptr<httplib::SSLClient> client;
    if (client_cert == nullptr) {
      client = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port());
    } else {
      X509* cert = ParseCert(client_cert->cert_pem);
      EVP_PKEY* key = ParseKey(client_cert->key_pem);
      client = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port(), cert, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    }
    client->set_ca_cert_store(StoreOf(ca_pem));  // takes it
    client->enable_server_certificate_verification(true);
    client->set_connection_timeout(3);
    client->set_read_timeout(3);
    return client;
  }

  Pki pki_;
  std::shared_ptr<ServingCertificate> certificate_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> calls_{0};
};

TEST_F(HttpsServerTest, PostWithBodyIsAnsweredByItsRoute) {
  Serve();
  auto client = Client(pki_.ca.cert_pem);
  const std::string review(200 * 1024, 'r');  // many TLS records
  auto res = client->Post("/validate", review, "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"type\":\"application/json\",\"bytes\":204800}");
  auto unknown = client->Post("/mutate", "{}", "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  auto get = client->Get("/validate");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
}

TEST_F(HttpsServerTest, OneTlsConnectionServesRequestsInTurn) {
  Serve();
  // The Kubernetes API server's Go client offers h2 first.
  TlsClient client(server_->port(), pki_.ca.cert_pem, {nullptr, {"h2", "http/1.1"}, 0});
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.alpn(), "http/1.1");
  ASSERT_TRUE(client.Send(Post("/validate", "{\"first\":true}")));
  EXPECT_EQ(client.ReadResponse().rfind("HTTP/1.1 200 OK", 0), 0u);
  ASSERT_TRUE(client.Send(Post("/validate", std::string(40000, 's'))));
  const std::string second = client.ReadResponse();
  EXPECT_EQ(second.rfind("HTTP/1.1 200 OK", 0), 0u) << second;
  EXPECT_NE(second.find("\"bytes\":40000"), std::string::npos) << second;
  // Two at once, in one TLS record.
  ASSERT_TRUE(client.Send(Post("/validate", "a") + Post("/validate", "bc")));
  EXPECT_NE(client.ReadResponse().find("\"bytes\":1}"), std::string::npos);
  EXPECT_NE(client.ReadResponse().find("\"bytes\":2}"), std::string::npos);
  EXPECT_EQ(calls_.load(), 4);
}

TEST_F(HttpsServerTest, ClientWithoutHttp11IsRefused) {
  Serve();
  TlsClient h2_only(server_->port(), pki_.ca.cert_pem, {nullptr, {"h2"}, 0});
  EXPECT_FALSE(h2_only.connected());
  TlsClient no_alpn(server_->port(), pki_.ca.cert_pem);
  ASSERT_TRUE(no_alpn.connected());
  ASSERT_TRUE(no_alpn.Send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  EXPECT_EQ(no_alpn.ReadResponse().rfind("HTTP/1.1 200 OK", 0), 0u);
}

TEST_F(HttpsServerTest, Tls12IsServed) {
  Serve();
  TlsClient tls12(server_->port(), pki_.ca.cert_pem, {nullptr, {"http/1.1"}, TLS1_2_VERSION});
  ASSERT_TRUE(tls12.connected());
  EXPECT_EQ(tls12.alpn(), "http/1.1");
  ASSERT_TRUE(tls12.Send(Post("/validate", "{}")));
  EXPECT_EQ(tls12.ReadResponse().rfind("HTTP/1.1 200 OK", 0), 0u);
  ASSERT_TRUE(tls12.Send(Post("/validate", "{}")));
  EXPECT_EQ(tls12.ReadResponse().rfind("HTTP/1.1 200 OK", 0), 0u);
}

TEST_F(HttpsServerTest, RotatedCertificateServesNewConnections) {
  Serve();
  TlsClient before(server_->port(), pki_.ca.cert_pem);
  ASSERT_TRUE(before.connected());
  ASSERT_TRUE(before.Send(Post("/validate", "{}")));
  EXPECT_EQ(before.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);

  ASSERT_TRUE(certificate_->Set(pki_.second_server.cert_pem, pki_.second_server.key_pem).ok());
  auto second = Client(pki_.second_ca.cert_pem);
  auto res = second->Post("/validate", "{}", "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  // The first CA no longer verifies the server.
  auto first = Client(pki_.ca.cert_pem)->Get("/healthz");
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error(), httplib::Error::SSLServerVerification);
  // A connection open before the rotation keeps the certificate it was handshaken with.
  ASSERT_TRUE(before.Send(Post("/validate", "{}")));
  EXPECT_EQ(before.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);

  // A key that is not the certificate's is refused, and the certificate stays.
  const absl::Status mismatched =
      certificate_->Set(pki_.server.cert_pem, pki_.second_server.key_pem);
  EXPECT_EQ(mismatched.code(), absl::StatusCode::kInvalidArgument) << mismatched;
  EXPECT_EQ(certificate_->Set("garbage", pki_.server.key_pem).code(),
            absl::StatusCode::kInvalidArgument);
  auto again = Client(pki_.second_ca.cert_pem)->Get("/healthz");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

TEST_F(HttpsServerTest, TrickledOrAbsentHandshakesDoNotDelayOthers) {
  HttpServerOptions options;
  options.workers = 1;
  options.request_timeout = absl::Seconds(1);
  options.idle_timeout = absl::Seconds(30);
  Serve(options);
  // Connections that never begin a handshake: each only waits beside the others.
  std::vector<int> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(Connect(server_->port()));
  const std::string hello = ClientHello();
  ASSERT_GT(hello.size(), 100u);
  const int trickler = Connect(server_->port());
  ASSERT_GE(trickler, 0);
  const absl::Time start = absl::Now();
  bool prompt_answered = false;
  bool closed = false;
  // One byte of the ClientHello every 50 ms: the whole would take many seconds.
  for (size_t i = 0; i < hello.size() && absl::Now() - start < absl::Seconds(5); ++i) {
    if (!SendPlain(trickler, hello.substr(i, 1))) {
      closed = true;
      break;
    }
    if (!prompt_answered && absl::Now() - start > absl::Milliseconds(300)) {
      const absl::Time asked = absl::Now();
      auto res = Client(pki_.ca.cert_pem)->Post("/validate", "{}", "application/json");
      ASSERT_TRUE(res) << httplib::to_string(res.error());
      EXPECT_EQ(res->status, 200);
      EXPECT_LT(absl::Now() - asked, absl::Seconds(1));
      prompt_answered = true;
    }
    pollfd p{trickler, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char c;
      if (recv(trickler, &c, 1, 0) <= 0) {
        closed = true;
        break;
      }
    }
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(prompt_answered);
  EXPECT_TRUE(closed);
  EXPECT_GE(took, absl::Milliseconds(900));  // the request timeout, from its first byte
  EXPECT_LT(took, absl::Seconds(3));
  close(trickler);
  for (int fd : silent) {
    EXPECT_GE(fd, 0);
    if (fd >= 0) close(fd);
  }
}

TEST_F(HttpsServerTest, PlainHttpToTheTlsPortIsClosed) {
  Serve();
  const int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendPlain(fd, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  bool closed = false;
  const std::string got = ReadUntilClosed(fd, absl::Seconds(3), &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.find("HTTP/1.1"), std::string::npos) << got;
  close(fd);
  auto res = Client(pki_.ca.cert_pem)->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(HttpsServerTest, ClientCaRequiresACertificateItSigned) {
  HttpServerOptions options;
  options.tls_client_ca_pem = pki_.client_ca.cert_pem;
  Serve(options);
  // With TLS 1.3 the client may finish its handshake before the server refuses: no answer
  // to the request is what tells.
  EXPECT_FALSE(Client(pki_.ca.cert_pem)->Post("/validate", "{}", "application/json"));
  EXPECT_FALSE(Client(pki_.ca.cert_pem, &pki_.server)->Post("/validate", "{}", "application/json"));
  auto res = Client(pki_.ca.cert_pem, &pki_.client)->Post("/validate", "{}", "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(HttpsServerTest, StopEndsTlsConnections) {
  Serve();
  TlsClient kept(server_->port(), pki_.ca.cert_pem);
  ASSERT_TRUE(kept.connected());
  ASSERT_TRUE(kept.Send(Post("/validate", "{}")));
  EXPECT_EQ(kept.ReadResponse().rfind("HTTP/1.1 200", 0), 0u);
  const int handshaking = Connect(server_->port());
  ASSERT_TRUE(SendPlain(handshaking, ClientHello().substr(0, 10)));
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  server_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  bool closed = false;
  ReadUntilClosed(handshaking, absl::Seconds(1), &closed);
  EXPECT_TRUE(closed);
  close(handshaking);
  EXPECT_EQ(kept.ReadResponse(), "");
}

TEST(HttpsServeTest, RefusesTlsThatCannotServe) {
  const Routes routes = {{"GET", "/healthz", [](const HttpRequest&) { return HttpResponse{}; }}};
  HttpServerOptions never_set;
  never_set.tls = std::make_shared<ServingCertificate>();
  EXPECT_EQ(HttpServer::Serve("127.0.0.1:0", routes, never_set).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const Pki pki;
  auto certificate = ServingCertificate::Create(pki.server.cert_pem, pki.server.key_pem);
  ASSERT_TRUE(certificate.ok());
  HttpServerOptions bad_ca;
  bad_ca.tls = *certificate;
  bad_ca.tls_client_ca_pem = "not a certificate";
  EXPECT_EQ(HttpServer::Serve("127.0.0.1:0", routes, bad_ca).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ServingCertificate::Create(pki.server.cert_pem, pki.client.key_pem).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coach::server
