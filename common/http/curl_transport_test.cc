// CurlTransport against cpp-httplib servers on 127.0.0.1: methods, bodies, headers, answers
// of any status, streaming, stopping, cancelling, timeouts, connection failures, connection
// reuse, the body cap, and TLS (verification, a CA as a file or PEM bytes, insecure skip,
// client certificates).
#include "common/http/curl_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/http/url.h"
#include "common/testing/test_dir.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace coach::http {
namespace {

// Runs `server` on a loopback port until destroyed.
class Serving {
 public:
  explicit Serving(std::unique_ptr<httplib::Server> server) : server_(std::move(server)) {
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Serving() {
    server_->stop();
    thread_.join();
  }
  httplib::Server& server() { return *server_; }
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
};

std::unique_ptr<CurlTransport> NewTransport(CurlTransportOptions options = {}) {
  auto t = CurlTransport::Create(std::move(options));
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

class CurlTransportTest : public ::testing::Test {
 protected:
  CurlTransportTest() : serving_(std::make_unique<httplib::Server>()) {}
  std::string Url(const std::string& path) {
    return absl::StrCat("http://127.0.0.1:", serving_.port(), path);
  }
  httplib::Server& server() { return serving_.server(); }

  Serving serving_;
};

TEST_F(CurlTransportTest, MethodsBodiesAndHeaders) {
  std::mutex mu;
  std::vector<std::string> seen;
  auto record = [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> l(mu);
    std::string q;
    for (const auto& [k, v] : req.params) absl::StrAppend(&q, k, "=", v, ";");
    seen.push_back(absl::StrCat(req.method, " ", req.path, "?", q, " body=", req.body,
                                " x=", req.get_header_value("X-Test"),
                                " expect=", req.get_header_value("Expect"),
                                " ua=", req.get_header_value("User-Agent")));
    res.set_header("X-Answer", "42");
    res.set_content("ok:" + req.method, "text/plain");
  };
  server().Get("/r", record);
  server().Post("/r", record);
  server().Put("/r", record);
  server().Patch("/r", record);
  server().Delete("/r", record);
  CurlTransportOptions options;
  options.user_agent = "coach-test/1";
  auto t = NewTransport(options);

  Request get;
  get.url = WithQuery(Url("/r"), {{"labelSelector", "app=x,tier in (a,b)"}, {"watch", "1"}});
  get.headers = {{"X-Test", "g"}};
  Result r = t->Send(get);
  ASSERT_TRUE(r.success()) << r.error;
  EXPECT_EQ(r.response.status, 200);
  EXPECT_EQ(r.response.body, "ok:GET");
  EXPECT_EQ(r.response.Header("x-answer"), "42");
  EXPECT_EQ(r.response.Header("Content-Type"), "text/plain");
  EXPECT_FALSE(r.response.Header("X-Missing").has_value());

  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) {
    Request req;
    req.method = method;
    req.url = Url("/r");
    req.body = absl::StrCat("{\"m\":\"", method, "\"}");
    req.headers = {{"Content-Type", "application/json"}, {"X-Test", method}};
    Result w = t->Send(req);
    ASSERT_TRUE(w.success()) << method << ": " << w.error;
    EXPECT_EQ(w.response.body, absl::StrCat("ok:", method));
  }
  Request empty_delete;
  empty_delete.method = "DELETE";
  empty_delete.url = Url("/r");
  ASSERT_TRUE(t->Send(empty_delete).success());

  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0],
            "GET /r?labelSelector=app=x,tier in (a,b);watch=1; body= x=g expect= ua=coach-test/1");
  EXPECT_EQ(seen[1], "POST /r? body={\"m\":\"POST\"} x=POST expect= ua=coach-test/1");
  EXPECT_EQ(seen[2], "PUT /r? body={\"m\":\"PUT\"} x=PUT expect= ua=coach-test/1");
  EXPECT_EQ(seen[3], "PATCH /r? body={\"m\":\"PATCH\"} x=PATCH expect= ua=coach-test/1");
  EXPECT_EQ(seen[4], "DELETE /r? body={\"m\":\"DELETE\"} x=DELETE expect= ua=coach-test/1");
  EXPECT_EQ(seen[5], "DELETE /r? body= x= expect= ua=coach-test/1");
}

TEST_F(CurlTransportTest, AnyStatusIsAnAnswer) {
  server().Get("/e", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_header("Retry-After", " 7 ");
    res.set_content("{\"reason\":\"busy\"}", "application/json");
  });
  auto t = NewTransport();
  Request req;
  req.url = Url("/e");
  Result r = t->Send(req);
  EXPECT_TRUE(r.answered());
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.failure, Failure::kNone);
  EXPECT_EQ(r.response.status, 503);
  EXPECT_EQ(r.response.body, "{\"reason\":\"busy\"}");
  EXPECT_EQ(r.response.Header("retry-after"), "7");
  req.url = Url("/missing");
  EXPECT_EQ(t->Send(req).response.status, 404);
}

TEST_F(CurlTransportTest, StreamsA2xxBodyChunkByChunk) {
  server().Get("/stream", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [](size_t offset, httplib::DataSink& sink) {
      if (offset >= 30) {
        sink.done();
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // separate chunks on the wire
      return sink.write("0123456789", 10);
    });
  });
  server().Get("/fail", [](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content("gone", "text/plain");
  });
  auto t = NewTransport();
  std::string streamed;
  int chunks = 0;
  ChunkSink sink = [&](absl::string_view chunk) {
    ++chunks;
    streamed.append(chunk.data(), chunk.size());
    return true;
  };
  SendOptions options;
  options.sink = &sink;
  Request req;
  req.url = Url("/stream");
  Result r = t->Send(req, options);
  ASSERT_TRUE(r.success()) << r.error;
  EXPECT_EQ(streamed, "012345678901234567890123456789");
  EXPECT_GE(chunks, 1);
  EXPECT_EQ(r.response.body, "");

  // A non-2xx answer is buffered for the caller, not streamed.
  streamed.clear();
  req.url = Url("/fail");
  r = t->Send(req, options);
  EXPECT_EQ(r.response.status, 410);
  EXPECT_EQ(r.response.body, "gone");
  EXPECT_EQ(streamed, "");
}

// A stream that writes once and then stays open until the test ends.
void ServeEndlessStream(httplib::Server& server, std::atomic<bool>* done) {
  server.Get("/endless", [done](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [done](size_t offset, httplib::DataSink& sink) {
      if (offset == 0) return sink.write("first\n", 6);
      for (int i = 0; i < 200 && !done->load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (done->load()) return false;
      return sink.write("tick\n", 5);
    });
  });
}

TEST_F(CurlTransportTest, SinkStopsTheStream) {
  std::atomic<bool> done{false};
  ServeEndlessStream(server(), &done);
  auto t = NewTransport();
  ChunkSink sink = [](absl::string_view) { return false; };
  SendOptions options;
  options.sink = &sink;
  Request req;
  req.url = Url("/endless");
  Result r = t->Send(req, options);
  done = true;
  EXPECT_EQ(r.failure, Failure::kStoppedBySink) << r.error;
  EXPECT_EQ(r.response.status, 200);
}

TEST_F(CurlTransportTest, CancelFlagEndsAStream) {
  std::atomic<bool> done{false};
  ServeEndlessStream(server(), &done);
  auto t = NewTransport();
  std::atomic<bool> cancel{false};
  ChunkSink sink = [&](absl::string_view) {
    cancel = true;  // raised after the first chunk; the transport notices within a second or so
    return true;
  };
  SendOptions options;
  options.sink = &sink;
  options.cancel = &cancel;
  Request req;
  req.url = Url("/endless");
  const absl::Time start = absl::Now();
  Result r = t->Send(req, options);
  done = true;
  EXPECT_EQ(r.failure, Failure::kCancelled) << r.error;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(CurlTransportTest, TimeoutEndsASlowAnswer) {
  server().Get("/slow", [](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content("late", "text/plain");
  });
  auto t = NewTransport();
  Request req;
  req.url = Url("/slow");
  req.timeout = absl::Milliseconds(200);
  Result r = t->Send(req);
  EXPECT_EQ(r.failure, Failure::kTimeout) << r.error;
  EXPECT_FALSE(r.error.empty());
}

TEST_F(CurlTransportTest, ConnectionFailures) {
  auto t = NewTransport();
  // A port that was free a moment ago: bound (not listening), then closed.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  Request req;
  req.timeout = absl::Seconds(10);
  req.url = absl::StrCat("http://127.0.0.1:", ntohs(addr.sin_port), "/");
  Result refused = t->Send(req);
  EXPECT_EQ(refused.failure, Failure::kCouldNotConnect) << refused.error;
  EXPECT_EQ(refused.response.status, 0);
  req.url = "http://no-such-host.invalid/";
  EXPECT_EQ(t->Send(req).failure, Failure::kCouldNotConnect);
  req.url = "gopher+x://127.0.0.1/";
  EXPECT_EQ(t->Send(req).failure, Failure::kBadUrl);
}

TEST_F(CurlTransportTest, ReusesConnections) {
  std::mutex mu;
  std::set<int> client_ports;
  server().Get("/p", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> l(mu);
    client_ports.insert(req.remote_port);
    res.set_content("x", "text/plain");
  });
  auto t = NewTransport();
  Request req;
  req.url = Url("/p");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(t->Send(req).success());
  EXPECT_EQ(client_ports.size(), 1u);  // one keep-alive connection, five requests
}

TEST_F(CurlTransportTest, CapsBufferedBodies) {
  server().Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(100000, 'b'), "text/plain");
  });
  CurlTransportOptions options;
  options.max_body_bytes = 1000;
  auto t = NewTransport(options);
  Request req;
  req.url = Url("/big");
  Result r = t->Send(req);
  ASSERT_TRUE(r.success());
  EXPECT_GE(r.response.body.size(), 1000u);
  EXPECT_LT(r.response.body.size(), 100000u);
  EXPECT_TRUE(r.response.body_cut);
}

// ---------------------------------------------------------------------------------------------
// TLS

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A CA, a server certificate for 127.0.0.1 signed by it, and a client certificate signed by it.
class Pki {
 public:
  Pki() : dir_(::coach::testing::FreshTestDir("pki")) {
    const std::string cmd = absl::StrCat(
        "cd ", dir_, " && ",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out "
        "ca.pem && ",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out "
        "server.csr && ",
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext && ",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 ",
        "-extfile san.ext -out server.pem && ",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key -out client.csr "
        "&& ",
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out "
        "client.pem",
        " >/dev/null 2>&1");
    ok_ = std::system(cmd.c_str()) == 0;
  }
  bool ok() const { return ok_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  const std::string dir_;
  bool ok_ = false;
};

class CurlTransportTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new Pki(); }
  static void TearDownTestSuite() { delete pki_; }
  void SetUp() override {
    ASSERT_TRUE(pki_->ok()) << "openssl could not make the test certificates";
  }

  // An HTTPS server; with `require_client_cert`, one that refuses clients without a certificate
  // signed by the CA.
  std::unique_ptr<Serving> Https(bool require_client_cert) {
    auto server = require_client_cert
                      ? std::make_unique<httplib::SSLServer>(pki_->path("server.pem").c_str(),
                                                             pki_->path("server.key").c_str(),
                                                             pki_->path("ca.pem").c_str())
                      : std::make_unique<httplib::SSLServer>(pki_->path("server.pem").c_str(),
                                                             pki_->path("server.key").c_str());
    server->Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("tls", "text/plain");
    });
    return std::make_unique<Serving>(std::move(server));
  }
  static Result Get(const TlsOptions& tls, int port) {
    CurlTransportOptions options;
    options.tls = tls;
    options.connect_timeout = absl::Seconds(5);
    Request req;
    req.url = absl::StrCat("https://127.0.0.1:", port, "/");
    req.timeout = absl::Seconds(10);
    return NewTransport(options)->Send(req);
  }

  static Pki* pki_;
};

Pki* CurlTransportTlsTest::pki_ = nullptr;

TEST_F(CurlTransportTlsTest, VerifiesTheServer) {
  auto https = Https(false);
  Result unknown_ca = Get({}, https->port());
  EXPECT_EQ(unknown_ca.failure, Failure::kTls) << unknown_ca.error;

  TlsOptions ca_file;
  ca_file.ca_file = pki_->path("ca.pem");
  Result r = Get(ca_file, https->port());
  ASSERT_TRUE(r.success()) << r.error;
  EXPECT_EQ(r.response.body, "tls");

  TlsOptions ca_pem;
  ca_pem.ca_pem = ReadFile(pki_->path("ca.pem"));
  EXPECT_TRUE(Get(ca_pem, https->port()).success());

  TlsOptions insecure;
  insecure.insecure_skip_verify = true;
  EXPECT_TRUE(Get(insecure, https->port()).success());

  TlsOptions missing_ca;
  missing_ca.ca_file = pki_->path("no-such-ca.pem");
  EXPECT_EQ(Get(missing_ca, https->port()).failure, Failure::kTls);
}

TEST_F(CurlTransportTlsTest, ClientCertificates) {
  auto https = Https(true);
  TlsOptions without;
  without.ca_file = pki_->path("ca.pem");
  EXPECT_FALSE(Get(without, https->port()).success());

  TlsOptions files = without;
  files.client_cert_file = pki_->path("client.pem");
  files.client_key_file = pki_->path("client.key");
  Result r = Get(files, https->port());
  EXPECT_TRUE(r.success()) << r.error;

  TlsOptions pem;
  pem.ca_pem = ReadFile(pki_->path("ca.pem"));
  pem.client_cert_pem = ReadFile(pki_->path("client.pem"));
  pem.client_key_pem = ReadFile(pki_->path("client.key"));
  r = Get(pem, https->port());
  EXPECT_TRUE(r.success()) << r.error;
}

}  // namespace
}  // namespace coach::http
